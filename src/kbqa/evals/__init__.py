"""Evaluation: pure metric functions and a runner over question files."""

from kbqa.evals.metrics import (
    answer_in_context,
    exact_match,
    max_over_golds,
    normalize_answer,
    recall_at_k,
    token_f1,
)

__all__ = [
    "answer_in_context",
    "exact_match",
    "max_over_golds",
    "normalize_answer",
    "recall_at_k",
    "token_f1",
]
