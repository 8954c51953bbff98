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
from collections.abc import Callable, Iterable, Sequence

import regex

from kbqa.text import fold_digits, normalize_text

_PUNCT = regex.compile(r"[\p{P}\p{S}]+")
_ARTICLES = regex.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation plus Bangla: :func:`~kbqa.text.normalize_text` (NFC, format
    characters out), lower, punctuation/danda out, digits to ASCII."""
    text = fold_digits(normalize_text(text)).lower()
    text = _PUNCT.sub(" ", text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


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


def answer_in_context(golds: Iterable[str], context: str) -> float:
    """1.0 when some normalised gold answer occurs inside the normalised context."""
    ctx = f" {normalize_answer(context)} "
    return float(any(g2 and f" {g2} " in ctx for g2 in (normalize_answer(g) for g in golds)))


def answer_contained(prediction: str, gold: str) -> float:
    """1.0 when the normalised ``gold`` occurs as whole tokens inside the normalised
    ``prediction`` (FlashRAG's accuracy; Jin et al., 2024). An empty gold or prediction -> 0.0."""
    g, p = normalize_answer(gold), normalize_answer(prediction)
    if not g or not p:
        return 0.0
    return float(f" {g} " in f" {p} ")
