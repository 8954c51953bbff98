"""What ``kbqa ask`` and ``kbqa chat`` say about an answer besides the answer: the reader's own
answer when a later stage replaced it, the extractor's span when the reader's answer was kept
over it, and why a question was abstained on. Plain functions of
the graph's output (:class:`~kbqa.state.OutputState`)."""

from __future__ import annotations

from typing import Any

import regex

from kbqa.retrieval.tokenizer import tokenize

_DIGIT = regex.compile(r"\p{Nd}")
NUMERIC_TYPES = frozenset({"date", "number"})
"""Question types whose answer holds a digit (the extractor's note is shown only then)."""
NAMED_TYPES = frozenset({"person", "location"})
"""Question types whose answer is a name, with no digit."""

READER_STAGES = ("generate", "retry")
"""``stage_answers`` entries of the reader's readings."""


def _last_reading(out: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """The index and entry of the reader's last ``stage_answers`` entry, or None."""
    stages = out.get("stage_answers") or []
    found = [(i, e) for i, e in enumerate(stages) if e.get("stage") in READER_STAGES]
    return found[-1] if found else None


def replaced_by(out: dict[str, Any]) -> list[str]:
    """The stages that changed the reader's answer, in order: those whose ``stage_answers``
    entry differs from the answer before them, then ``finalize`` when it refused an answer no
    passage holds (``finalize: ungrounded`` on the route). Empty when the final answer is the
    reader's (finalize's clean-up aside) or the reader did not read."""
    last = _last_reading(out)
    if last is None or not out.get("reader_answer"):
        return []
    index, entry = last
    current = (entry.get("answer"), bool(entry.get("abstained")))
    stages = []
    for later in (out.get("stage_answers") or [])[index + 1 :]:
        answer = (later.get("answer"), bool(later.get("abstained")))
        if answer != current:
            stages.append(str(later.get("stage")))
            current = answer
    if "finalize: ungrounded" in out.get("route", []):
        stages.append("finalize")
    return stages


def reader_note(out: dict[str, Any]) -> str | None:
    """``reader said: X (replaced by cross_check)`` when a later stage replaced the reader's
    answer, else None."""
    stages = replaced_by(out)
    if not stages:
        return None
    return f"reader said: {out['reader_answer']} (replaced by {', then '.join(stages)})"


def retrieval_note(out: dict[str, Any], index_dir: str) -> str | None:
    """The retrieval line of ``kbqa ask`` and ``kbqa chat``: ``retrieval: bm25 + rerank (NAME)``
    when a reranker ordered the pool, a note when the index's dense part is not built yet
    (with the command that adds it), else None (the default retrieval says nothing)."""
    mode = str(out.get("retrieval_mode", ""))
    if "+ rerank (" in mode:
        return f"retrieval: {mode}"
    if mode.startswith("bm25 (dense pending)"):
        return (
            f"retrieval: BM25 only; the dense part of {index_dir} is not built yet (run "
            f"`kbqa index --continue --out {index_dir}` to add it)"
        )
    return None


def extractor_note(out: dict[str, Any]) -> str | None:
    """``extractor found: X (not taken)`` when the cross-check kept the reader's answer over a
    different span of the pattern extractor (``cross_check: disagrees, kept`` on the route and
    ``extracted_answer`` set) and the span fits the question's type (a digit for a date or a
    number, none for a person or a place), else None: the other reading of the same passages,
    for a user who wonders which to trust (a new user's finding)."""
    span = str(out.get("extracted_answer") or "")
    if not span or "cross_check: disagrees, kept" not in out.get("route", []):
        return None
    # a span of another type than the question's is noise beside the answer (a new user read
    # `নির্মাণ শুরু হয় ১৯৬১ সালে` under a *who* question): a date or number question's span
    # must hold a digit, a person's or place's must not
    numeric = bool(_DIGIT.search(span))
    kind = out.get("question_type")
    if (kind in NUMERIC_TYPES and not numeric) or (kind in NAMED_TYPES and numeric):
        return None
    return f"extractor found: {span} (not taken)"


def _status_after(route: list[str], node: str) -> str:
    """The status the last run of ``node`` recorded on the route ("" when none)."""
    runs = [i for i, name in enumerate(route) if name == node]
    if not runs or runs[-1] + 1 >= len(route):
        return ""
    status = route[runs[-1] + 1]
    return status if status.startswith(f"{node}:") else ""


def abstention_reason(out: dict[str, Any]) -> str | None:
    """Why an abstained question was abstained on, or None (an answer, or no known reason):
    retrieval found nothing (or the question has no word the index's tokenizer keeps);
    finalize refused an answer no passage holds; the cross-check found the passages do not
    cover the question; the reader found no answer (with its abstention probability when a
    threshold decided it); the extractor found none."""
    if not out.get("abstained"):
        return None
    route = list(out.get("route", []))
    # the reader was not asked for want of passages; the extractor (--no-llm) had none either
    extracted_nothing = "generate" not in route and out.get("retrieved") == []
    if _status_after(route, "generate") == "generate: no context" or extracted_nothing:
        if not tokenize(str(out.get("question") or "")):
            return "the question has no word to search for (only punctuation or symbols)"
        return "retrieval found no passage for this question"
    stages = out.get("stage_answers") or []
    if "finalize: ungrounded" in route:
        refused = next((e["answer"] for e in reversed(stages) if not e.get("abstained")), "")
        return "no passage holds this answer" + (f" ({refused})" if refused else "")
    if "cross_check: abstained" in route:
        share = float(out.get("question_coverage") or 0.0)
        return (
            f"the passages do not cover the question (their best sentence holds {share:.0%}"
            " of its words; cross_check)"
        )
    last = _last_reading(out)
    if last is not None and last[1].get("abstained"):
        return _reader_reason(out)
    if stages and stages[-1].get("stage") == "extract":
        return "the pattern extractor found no answer in the passages"
    return None


def _reader_reason(out: dict[str, Any]) -> str:
    p, t = out.get("abstention_probability"), out.get("abstention_threshold")
    first = ", at its first reading" if out.get("retries") else ""
    if p is None:
        return "the reader found no answer in the passages"
    if t is not None and p < t:  # an empty reply, the question echoed, a paraphrase
        return f"the reader's reply held no answer (p = {p:.2f}{first}, below the threshold {t:g})"
    return f"the reader found no answer in the passages (p = {p:.2f}{first})"
