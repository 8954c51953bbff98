import itertools

import pytest

from kbqa.corpus.chunking import chunk_document, chunk_text, clean_text, split_sentences


def test_split_on_danda_and_question_marks() -> None:
    assert split_sentences("প্রথম বাক্য। দ্বিতীয়? তৃতীয়! Fourth. Fifth") == [
        "প্রথম বাক্য।",
        "দ্বিতীয়?",
        "তৃতীয়!",
        "Fourth.",
        "Fifth",
    ]


def test_clean_text_keeps_zero_width_joiner_and_folds_space() -> None:
    assert clean_text("র\u200d্যাব   এবং\r\n\n\x07 ঢাকা ") == "র\u200d্যাব এবং\nঢাকা"


def test_chunks_respect_size_end_on_sentences_and_overlap() -> None:
    sentences = [f"এটি বাক্য নম্বর {i}।" for i in range(200)]
    text = " ".join(sentences)
    chunks = chunk_text(text, size=200, overlap=50)
    assert len(chunks) > 5
    assert all(len(c) <= 200 for c in chunks)
    assert all(c.endswith("।") for c in chunks)  # sentence boundaries
    for prev, nxt in itertools.pairwise(chunks):
        prev_sentences = split_sentences(prev)
        carried = [s for s in split_sentences(nxt) if s in prev_sentences]
        assert carried, "overlap carries the last sentence(s) of the previous chunk"
        assert prev_sentences[-len(carried) :] == carried
        assert len(" ".join(carried)) <= 50
    # nothing is lost: every sentence appears in some chunk
    joined = " ".join(chunks)
    assert all(s in joined for s in sentences)


def test_long_sentence_is_hard_split_with_overlap() -> None:
    text = " ".join(["শব্দ"] * 400)  # one sentence of 1999 chars
    chunks = chunk_text(text, size=300, overlap=60)
    assert all(len(c) <= 300 for c in chunks)
    assert len(chunks) >= 7


def test_chunk_ids_and_prev_ids() -> None:
    chunks = chunk_document(
        "d", "t", "", " ".join(["বাক্য এক।"] * 300), first_chunk_id=10, size=100, overlap=20
    )
    assert [c.chunk_id for c in chunks] == list(range(10, 10 + len(chunks)))
    assert chunks[0].prev_chunk_id == -1
    assert all(c.prev_chunk_id == c.chunk_id - 1 for c in chunks[1:])
    assert [c.position for c in chunks] == list(range(len(chunks)))


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (100, 100), (100, -1)])
def test_bad_chunk_parameters(size: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="chunk"):
        chunk_text("x", size=size, overlap=overlap)
