"""The reader's training questions (kbqa's question-file format, :mod:`kbqa.evals.datasets`,
plus the annotators' ``evidence`` sentence where the file has one) and their seeded split by
document."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kbqa.corpus.loaders import read_jsonl_objects
from kbqa.errors import InputError
from kbqa.evals.datasets import Question, load_questions


@dataclass(frozen=True, slots=True)
class TrainingQuestion:
    """A training question with its annotators' supporting sentence."""

    question: Question
    evidence: str = ""


def load_training_questions(path: Path) -> list[TrainingQuestion]:
    """Read a training question file (kbqa's question-file format, plus an optional ``evidence``
    string per line).

    Raises:
        InputError: As :func:`kbqa.evals.datasets.load_questions`; also an ``evidence`` that is
            not a string.
    """
    questions = load_questions(path)
    evidence: dict[str, str] = {}
    for lineno, obj in read_jsonl_objects(Path(path)):
        if isinstance(obj, InputError):
            raise obj
        ev = obj.get("evidence") or ""
        if not isinstance(ev, str):
            raise InputError(f"{path}:{lineno}: evidence must be a string, got {ev!r}")
        evidence[str(obj.get("qid"))] = ev
    return [TrainingQuestion(q, evidence.get(q.qid, "")) for q in questions]


def split_by_document(
    questions: Sequence[TrainingQuestion], val_fraction: float, seed: int
) -> dict[str, str]:
    """``doc_id -> "train" | "val"``: a seeded shuffle of the sorted document ids, the first
    ``val_fraction`` of them for validation.

    Raises:
        ValueError: ``val_fraction`` outside [0, 1).
    """
    if not 0 <= val_fraction < 1:
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    docs = sorted({q.question.doc_id or q.question.qid for q in questions})
    random.Random(seed).shuffle(docs)
    n_val = round(len(docs) * val_fraction)
    if len(docs) >= 2 and val_fraction > 0:  # keep one document on each side
        n_val = min(max(n_val, 1), len(docs) - 1)
    return {d: ("val" if i < n_val else "train") for i, d in enumerate(docs)}
