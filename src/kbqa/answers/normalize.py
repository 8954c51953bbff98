"""Answer normalisation: the SQuAD v1.1 evaluation script's (Rajpurkar et al., 2016), extended
to Bangla.

Lower-case, drop punctuation and the articles a/an/the, fold whitespace; added for Bangla: NFC
without format characters (ZWNJ, ZWJ: :func:`kbqa.text.normalize_text`), Unicode punctuation
(including the danda ``।`` and ``॥``) removed, Bangla digits mapped to ASCII. The serving graph
(grounding, the verifier) and the metrics (:mod:`kbqa.evals.metrics`) compare answers with it.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def answer_in_context(golds: Iterable[str], context: str) -> float:
    """1.0 when some normalised gold answer occurs inside the normalised context."""
    ctx = f" {normalize_answer(context)} "
    return float(any(g2 and f" {g2} " in ctx for g2 in (normalize_answer(g) for g in golds)))
