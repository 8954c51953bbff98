"""The Python API (``from kbqa import KBQA``) and the LangChain retriever, with fake models."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa import KBQA, Answer, Citation
from kbqa.errors import IndexLoadError, ModelError
from kbqa.langchain_retriever import KBQARetriever
from kbqa.prompts import ABSTENTION_PHRASE
from kbqa.resources import chat_model_for

QUESTION = "বাংলাদেশের রাজধানী কোথায়?"
FAKE = {"embedder": "fake/hash", "cross_check": "off", "web_search": "off"}


def test_ask_returns_a_typed_answer(both_index: Path) -> None:
    qa = KBQA.from_index(both_index, model="fake/script:ঢাকা", **FAKE)
    answer = qa.ask(QUESTION)
    assert isinstance(answer, Answer) and str(answer) == "ঢাকা"
    assert (answer.abstained, answer.answered_by) == (False, "generate")
    assert isinstance(answer.sources[0], Citation) and answer.sources[0].doc_id == "d1"
    assert answer.route == ["classify", "retrieve", "generate", "check_abstention", "finalize"]
    assert [node for node, _ in answer.timings] == answer.route
    assert answer.seconds >= sum(s for _, s in answer.timings) > 0
    assert answer.output["context_chunk_ids"]  # everything the graph returned
    assert answer.why is None  # an answer has no abstention reason
    wordless = KBQA.from_index(both_index, model="fake/abstain", **FAKE).ask("???")
    assert wordless.abstained and wordless.why is not None
    assert wordless.why.startswith("the question has no word to search for")


def test_batch_answers_in_order(both_index: Path) -> None:
    qa = KBQA.from_index(both_index, model="fake/script:ঢাকা|" + ABSTENTION_PHRASE,
                         max_retries=0, fallback=False, **FAKE)  # fmt: skip
    first, second = qa.batch([QUESTION, "মঙ্গল গ্রহের প্রথম মেয়র কে?"])
    assert (first.answer, first.abstained) == ("ঢাকা", False)
    assert (second.answer, second.abstained) == (ABSTENTION_PHRASE, True)


def test_stream_yields_nodes_tokens_then_the_answer(both_index: Path) -> None:
    qa = KBQA.from_index(both_index, model="fake/script:বৃহত্তম শহর", reading="joint", **FAKE)
    events = list(qa.stream(QUESTION))
    nodes = [e.node for e in events if e.kind == "node"]
    assert nodes == ["classify", "retrieve", "generate", "check_abstention", "finalize"]
    tokens = [e for e in events if e.kind == "token"]
    assert "".join(e.text for e in tokens).strip() == "বৃহত্তম শহর"
    assert {e.node for e in tokens} == {"generate"}
    # tokens arrive before generate's update, the answer last
    kinds = [(e.kind, e.node) for e in events]
    assert kinds.index(("token", "generate")) < kinds.index(("node", "generate"))
    assert events[-1].kind == "answer" and events[-1].answer is not None
    assert events[-1].answer.answer == "বৃহত্তম শহর" and events[-1].answer.route == nodes


def test_readings_of_each_hit_are_not_streamed_as_tokens(both_index: Path) -> None:
    """--reading each reads once a hit: its readings would stream one after another as if they
    were one answer, so none streams; the answer comes last as ever."""
    qa = KBQA.from_index(both_index, model="fake/script:বৃহত্তম শহর#each", k=2, **FAKE)
    events = list(qa.stream(QUESTION))
    assert [e for e in events if e.kind == "token"] == []
    assert chat_model_for(qa.context).calls == 2  # type: ignore[attr-defined]
    assert events[-1].kind == "answer" and events[-1].answer is not None
    assert events[-1].answer.answer == "বৃহত্তম শহর"


def test_bad_input_is_named(both_index: Path, tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="index not found"):
        KBQA.from_index(tmp_path / "none")
    with pytest.raises(TypeError, match="unknown setting"):
        KBQA.from_index(both_index, top_k=3)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        KBQA.from_index(both_index, k=0, **FAKE)
    with pytest.raises(ModelError):
        KBQA.from_index(both_index, model="no-such-model", **FAKE)
    qa = KBQA.from_index(both_index, model="fake/abstain", **FAKE)
    with pytest.raises(ValueError, match="question is empty"):
        qa.ask("  ")


def test_a_reader_that_cannot_load_leaves_the_extractor(both_index: Path, tmp_path: Path) -> None:
    missing = tmp_path / "missing.gguf"
    with pytest.raises(ModelError):  # a path that is not a file is a mistake, said at once
        KBQA.from_index(both_index, model=str(missing), **FAKE)
    qa = KBQA.from_index(both_index, model=str(missing), load=False, **FAKE)
    answer = qa.ask(QUESTION)
    assert answer.answered_by == "extract" and answer.route[2] == "extract"


def test_langchain_retriever_returns_documents_in_prompt_order(both_index: Path) -> None:
    retriever = KBQARetriever(index_dir=str(both_index), embedder="fake/hash", k=2)
    docs = retriever.invoke(QUESTION)
    hits = [d for d in docs if not d.metadata["is_padding"]]
    assert hits[0].metadata["doc_id"] == "d1" and "ঢাকা" in hits[0].page_content
    assert [d.metadata["rank"] for d in hits] == [1, 2]
    assert set(docs[0].metadata) == {"doc_id", "title", "url", "chunk_id", "score", "rank",
                                     "is_padding"}  # fmt: skip
    assert len(retriever.invoke(QUESTION, k=1)) <= 2  # a hit and its padding
    with pytest.raises(ValueError):
        KBQARetriever(index_dir=str(both_index), k=0)


def test_wrong_types_are_named(both_index: Path) -> None:
    qa = KBQA.from_index(both_index, model="fake/script:ঢাকা", **FAKE)
    with pytest.raises(TypeError, match="a question must be a string, got int"):
        qa.ask(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        qa.batch("abc")
    with pytest.raises(ValueError, match="question 1: question is empty"):
        qa.batch([QUESTION, " "])
    with pytest.raises(ValueError, match="question is empty"):
        qa.stream("")  # at the call, before iterating
    with pytest.raises(TypeError, match="index_dir is the path argument"):
        KBQA.from_index(both_index, index_dir="x")
    with pytest.raises(TypeError, match=r"got str; for an index directory use KBQA.from_index"):
        KBQA(str(both_index))  # type: ignore[arg-type]
    for bad in ({"bm25_weight": "0.5"}, {"abstention_phrase": None}, {"model": 123}):
        with pytest.raises(ValueError, match=r"must be a (number|string)"):
            KBQA.from_index(both_index, **{**FAKE, **bad})
    with pytest.raises(ValueError):
        KBQARetriever(index_dir=str(both_index), top_k=1)  # an unknown field
    assert KBQARetriever(index_dir=both_index, embedder="fake/hash").invoke(QUESTION)
