"""Answer and retrieval metrics, as pure functions.

Exact match and token F1 follow the SQuAD v1.1 evaluation script (Rajpurkar et al., 2016):
lower-case, drop punctuation and the articles a/an/the, fold whitespace, compare bags of tokens.
Added for Bangla: NFC without format characters (ZWNJ, ZWJ: :func:`kbqa.text.normalize_text`),
Unicode punctuation (including the danda ``।`` and ``॥``) removed, Bangla
digits mapped to ASCII. ``answers`` lists alternatives; a question's score is the maximum over
them. An unanswerable question (no gold answers) scores 1 when the system abstained, else 0
(SQuAD 2.0 convention).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from kbqa.answers.cross_check import YES_NO_WORDS
from kbqa.answers.normalize import answer_in_context, normalize_answer

__all__ = [
    "answer_contained",
    "answer_in_context",
    "answer_spans_in_context",
    "answer_spans_in_normalized",
    "exact_match",
    "max_over_golds",
    "normalize_answer",
    "recall_at_k",
    "token_f1",
]


YES_NO_GOLDS = YES_NO_WORDS
"""Normalised gold answers that are a yes/no verdict, not a span of any passage (the
cross-check's list of yes/no words)."""

SPAN_SEPARATOR = ";"
"""Joins the spans of one multi-span gold answer (BanglaRQA list and causal questions; the
data's README: alternatives are separate list entries, the spans of one answer share a string)."""


def answer_spans_in_context(golds: Sequence[str], context: str) -> float | None:
    """Whether the context holds a gold answer, counted so that every answerable question can
    reach 1.0: the metric of "the answer in the context read".

    :func:`answer_in_context` looks for each gold string whole. That is right for a span, but a
    yes/no gold (``হ্যাঁ``) is in no passage and a multi-span gold (``ভবন; প্রাসাদ; মন্দির``)
    is never one substring, so on BanglaRQA validation it capped the measure at about 0.74 even
    with the gold page read whole. Here a multi-span gold counts when every one of its spans
    is in the context, and a question whose golds are all yes/no verdicts scores None (not
    applicable), as an unanswerable one does.

    Args:
        golds: Gold alternatives (empty for an unanswerable question).
        context: The passages read, joined.

    Returns:
        1.0 or 0.0; None with no golds or only yes/no golds.
    """
    return answer_spans_in_normalized(golds, normalize_answer(context))


def answer_spans_in_normalized(golds: Sequence[str], normalized_context: str) -> float | None:
    """:func:`answer_spans_in_context` for a context already passed through
    :func:`normalize_answer` once, so one large text (a whole knowledge base) can be searched
    for many questions without normalising it again for each.

    Returns:
        1.0 or 0.0; None with no golds or only yes/no golds.
    """
    spans = [g for g in golds if normalize_answer(g) not in YES_NO_GOLDS and g.strip()]
    if not spans:
        return None
    ctx = f" {normalized_context} "
    for gold in spans:
        parts = [normalize_answer(p) for p in gold.split(SPAN_SEPARATOR)]
        parts = [p for p in parts if p]
        if parts and all(f" {p} " in ctx for p in parts):
            return 1.0
    return 0.0


def exact_match(prediction: str, gold: str) -> float:
    """1.0 when the normalised strings are equal, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall over normalised whitespace tokens.

    Both empty -> 1.0; exactly one empty -> 0.0.
    """
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def max_over_golds(
    metric: Callable[[str, str], float], prediction: str, golds: Sequence[str], *, abstained: bool
) -> float:
    """Best score over gold alternatives; with no golds (unanswerable) 1.0 iff abstained.

    An abstention on an answerable question scores 0.
    """
    if not golds:
        return float(abstained)
    if abstained:
        return 0.0
    return max(metric(prediction, g) for g in golds)


def recall_at_k(retrieved_doc_ids: Sequence[str], gold_doc_id: str, k: int) -> float:
    """1.0 when ``gold_doc_id`` is among the first ``k`` distinct retrieved documents."""
    seen: list[str] = []
    for doc in retrieved_doc_ids:
        if doc not in seen:
            seen.append(doc)
        if len(seen) == k:
            break
    return float(gold_doc_id in seen)


def answer_contained(prediction: str, gold: str) -> float:
    """1.0 when the normalised ``gold`` occurs as whole tokens inside the normalised
    ``prediction`` (FlashRAG's accuracy; Jin et al., 2024). An empty gold or prediction -> 0.0."""
    g, p = normalize_answer(gold), normalize_answer(prediction)
    if not g or not p:
        return 0.0
    return float(f" {g} " in f" {p} ")
