"""Evaluation: datasets, evaluators for ``langsmith.evaluate``, a resumable runner, summaries with
stage attribution, ablations, model scaling, reports with plots, and question generation.

Pipeline: :mod:`datasets` (questions) -> :mod:`runner` (graph + :mod:`evaluators`, records)
-> :mod:`summary` (figures) -> :mod:`report` (Markdown + PNG); :mod:`ablation` re-runs a sample
with stages off; :mod:`question_generation` drafts questions for a new knowledge base.
"""

from kbqa.evals.datasets import Question, load_questions, select
from kbqa.evals.evaluators import default_evaluators, score_all
from kbqa.evals.metrics import (
    answer_contained,
    answer_in_context,
    answer_spans_in_context,
    exact_match,
    max_over_golds,
    normalize_answer,
    recall_at_k,
    token_f1,
)
from kbqa.evals.summary import summarize

__all__ = [
    "Question",
    "answer_contained",
    "answer_in_context",
    "answer_spans_in_context",
    "default_evaluators",
    "exact_match",
    "load_questions",
    "max_over_golds",
    "normalize_answer",
    "recall_at_k",
    "score_all",
    "select",
    "summarize",
    "token_f1",
]
