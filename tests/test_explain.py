"""The notes ``kbqa ask`` and ``kbqa chat`` print beside an answer (:mod:`kbqa.answers.explain`)."""

from __future__ import annotations

from kbqa.answers.explain import extractor_note, retrieval_note


def test_the_retrieval_line_names_the_reranker_or_the_missing_dense_part() -> None:
    assert retrieval_note({"retrieval_mode": "bm25 + rerank (lexical)"}, "idx") == (
        "retrieval: bm25 + rerank (lexical)"
    )
    pending = retrieval_note({"retrieval_mode": "bm25 (dense pending)"}, "index/bn")
    assert pending is not None and "`kbqa index --continue --out index/bn`" in pending
    # the default retrieval, and an output without the field, say nothing
    assert retrieval_note({"retrieval_mode": "hybrid"}, "idx") is None
    assert retrieval_note({}, "idx") is None


def test_the_extractors_span_is_shown_only_when_it_fits_the_question_type() -> None:
    kept = {"route": ["generate", "cross_check: disagrees, kept"]}

    def note(kind: str, span: str) -> str | None:
        return extractor_note({**kept, "question_type": kind, "extracted_answer": span})

    assert note("date", "১৯১৮") == "extractor found: ১৯১৮ (not taken)"
    assert note("date", "প্রকৃত নাম") is None  # a date question's span holds a digit
    assert note("person", "নির্মাণ শুরু হয় ১৯৬১ সালে") is None  # a name holds none
    assert note("location", "বৃহত্তম শহর") == "extractor found: বৃহত্তম শহর (not taken)"
    assert note("other", "১৯৬১ সালে") == "extractor found: ১৯৬১ সালে (not taken)"
    # the reader's answer agreed, or was replaced: no note
    assert extractor_note({"route": ["cross_check: agrees"], "extracted_answer": "x"}) is None
