"""The cross-check's learned arbiter: when the reader's span and the pattern extractor's span
differ, a logistic regression over what both readings look like says which to keep.

On BanglaRQA validation the two readers are about as good and wrong on different questions: with
the default graph (seeds 0, 1 and 7 of 300) the extractor's span scores higher than the reader's
on 56-61 answered questions a sample and lower on 56-75, and taking the better of the two would
raise answerable F1 from 0.51-0.56 to 0.66-0.72. The hand-written rules
(:mod:`kbqa.answers.cross_check`) took part of that on one sample and lost it on another or on
people's own questions, where the extractor is far weaker (answerable F1 0.16 against the
reader's 0.28). The arbiter learns the choice from features of the pair instead of fixing it by
rule (:func:`arbiter_features`; the names in :data:`FEATURES`): the reader's abstention
probability, the share of the question's content words in the extractor's sentence, the two
spans' lengths, how much of each repeats the question, whether one holds the other, digits
against the question's type, the question's type and the extractor's method.

Weights: ``arbiter_bn.json`` beside this module, written by ``python
benchmarks/train_arbiter.py`` from an evaluation run's records (its manifest says which run and
data, and the held-out figures). Inference is numpy only and deterministic.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kbqa.answers.cleanup import drop_year_word
from kbqa.answers.extract import Extraction
from kbqa.answers.vocabulary import EDGE, YES_NO_FORMS
from kbqa.retrieval.tokenizer import tokenize
from kbqa.text import normalize_text

WEIGHTS_PATH = Path(__file__).with_name("arbiter_bn.json")
FEATURE_VERSION = 1
"""Bumped whenever :func:`arbiter_features` changes meaning; a weights file of another version
is refused."""

QUESTION_TYPES = ("yes/no", "date", "number", "person", "location", "list")
"""Question types (:func:`kbqa.answers.language.question_type`) with a feature of their own;
any other type (``other``, ``email``...) sets none of them."""
METHODS = ("aligned", "overlap")
"""Extractor methods (:attr:`~kbqa.answers.extract.Extraction.method`) with a feature of their
own; a typed pattern's name sets ``method=pattern`` (``yes/no`` is never asked: :func:`differ`)."""
NUMERIC_TYPES = frozenset({"date", "number"})

FEATURES: tuple[str, ...] = (
    "abstention_probability",
    "coverage",
    "bigram_coverage",
    "agrees",
    "reader_in_sentence",
    "reader_words_log",
    "extractor_words_log",
    "reader_repeats_question",
    "extractor_repeats_question",
    "extractor_inside_reader",
    "reader_inside_extractor",
    "reader_yes_no",
    "reader_digit",
    "extractor_digit",
    "numeric_reader_digit",
    "numeric_extractor_digit",
    "numeric_only_reader_digit",
    "numeric_only_extractor_digit",
    *(f"type={t}" for t in QUESTION_TYPES),
    *(f"method={m}" for m in (*METHODS, "pattern")),
)
"""The feature vector's entries, in order (each in [0, 1] but the two ``*_words_log``:
``log(1 + words)``)."""


def _bare(text: str) -> str:
    return normalize_text(text).strip(EDGE).lower()


def _share(words: Sequence[str], within: set[str]) -> float:
    return sum(w in within for w in words) / len(words) if words else 0.0


def _bigram_share(question: str, sentence: str) -> float:
    """The share of the question's word pairs (adjacent tokens) that the sentence holds
    adjacent too: high when the question was written from that sentence."""
    q = tokenize(question)
    pairs = set(itertools.pairwise(q))
    s = tokenize(sentence)
    return len(pairs & set(itertools.pairwise(s))) / len(pairs) if pairs else 0.0


def _has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def differ(answer: str, found: Extraction) -> bool:
    """Whether the arbiter is asked: the reader's ``answer`` and the extractor's span are
    different answers as ``finalize`` would give them (after normalisation, case, edge
    punctuation and a year's year word: :func:`~kbqa.answers.cleanup.drop_year_word`), and the
    extractor read a span (its ``yes/no`` method answers yes to every yes/no question: a prior,
    not a reading)."""
    return found.method != "yes/no" and _bare(drop_year_word(answer)) != _bare(
        drop_year_word(found.answer)
    )


def arbiter_features(
    question: str,
    question_type: str,
    answer: str,
    abstention_probability: float | None,
    found: Extraction,
) -> npt.NDArray[np.float64]:
    """The feature vector of one (reader answer, extractor span) pair, shape ``(len(FEATURES),)``.

    Args:
        question: The question.
        question_type: From :func:`kbqa.answers.language.question_type`.
        answer: The reader's answer (not an abstention).
        abstention_probability: The reader's probability of beginning the abstention phrase on
            the reading that answered (0-1); None (a reader that gives none) counts as 0.
        found: The extractor's span on the same context.
    """
    q = set(tokenize(question))
    r = tokenize(answer)
    e = tokenize(found.answer)
    sentence = set(tokenize(found.sentence))
    rs, es = set(r), set(e)
    numeric = question_type in NUMERIC_TYPES
    method = found.method if found.method in METHODS else "pattern"
    values = [
        float(abstention_probability or 0.0),
        float(found.coverage),
        _bigram_share(question, found.sentence),
        float(bool(rs & es) or (bool(rs) and rs <= sentence)),  # cross_check.agrees
        _share(r, sentence),
        math.log1p(len(r)),
        math.log1p(len(e)),
        _share(r, q),
        _share(e, q),
        float(bool(es) and es <= rs),
        float(bool(rs) and rs <= es),
        float(_bare(answer) in YES_NO_FORMS),
        float(_has_digit(answer)),
        float(_has_digit(found.answer)),
        float(numeric and _has_digit(answer)),
        float(numeric and _has_digit(found.answer)),
        float(numeric and _has_digit(answer) and not _has_digit(found.answer)),
        float(numeric and _has_digit(found.answer) and not _has_digit(answer)),
        *(float(question_type == t) for t in QUESTION_TYPES),
        *(float(method == m) for m in (*METHODS, "pattern")),
    ]
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True)
class Arbiter:
    """A logistic regression over standardised :func:`arbiter_features`.

    Attributes:
        mean: Per-feature mean, shape ``(len(FEATURES),)``.
        scale: Per-feature standard deviation (1 where a feature was constant), same shape.
        weights: Coefficients, same shape.
        bias: Intercept.
        threshold: The extractor's span is taken when :meth:`probability` is above it.
    """

    mean: npt.NDArray[np.float64]
    scale: npt.NDArray[np.float64]
    weights: npt.NDArray[np.float64]
    bias: float
    threshold: float = 0.5

    def probability(self, features: npt.NDArray[np.float64]) -> float:
        """The probability (0-1) that the extractor's span scores higher than the reader's."""
        z = float(((features - self.mean) / self.scale) @ self.weights) + self.bias
        return 1.0 / (1.0 + math.exp(-z))

    def prefers_extractor(
        self,
        question: str,
        question_type: str,
        answer: str,
        abstention_probability: float | None,
        found: Extraction,
    ) -> bool:
        """Whether the extractor's span should replace the reader's ``answer`` (always False
        when the two are the same answer)."""
        if not differ(answer, found):
            return False
        x = arbiter_features(question, question_type, answer, abstention_probability, found)
        return self.probability(x) > self.threshold

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Arbiter:
        """Read the weights file's ``model`` object; ValueError when its features or version are
        not this module's."""
        if data.get("feature_version") != FEATURE_VERSION:
            raise ValueError(
                f"arbiter weights are for feature version {data.get('feature_version')!r}, "
                f"this kbqa computes version {FEATURE_VERSION}: retrain with "
                "benchmarks/train_arbiter.py"
            )
        if tuple(data.get("features", ())) != FEATURES:  # type: ignore[arg-type]
            raise ValueError("arbiter weights name other features than kbqa.answers.arbiter")

        def vector(key: str) -> npt.NDArray[np.float64]:
            values = np.asarray(data[key], dtype=np.float64)
            if values.shape != (len(FEATURES),) or not np.all(np.isfinite(values)):
                raise ValueError(f"arbiter weights: {key!r} is not {len(FEATURES)} finite numbers")
            return values

        scale = vector("scale")
        if np.any(scale <= 0):
            raise ValueError("arbiter weights: 'scale' must be positive")
        return cls(
            mean=vector("mean"),
            scale=scale,
            weights=vector("weights"),
            bias=float(data["bias"]),  # type: ignore[arg-type]
            threshold=float(data.get("threshold", 0.5)),  # type: ignore[arg-type]
        )

    def to_json(self) -> dict[str, object]:
        return {
            "feature_version": FEATURE_VERSION,
            "features": list(FEATURES),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "weights": [round(float(v), 6) for v in self.weights],
            "bias": round(self.bias, 6),
            "threshold": self.threshold,
        }


@functools.cache
def shipped_arbiter() -> Arbiter:
    """The arbiter shipped in the package (``arbiter_bn.json``'s ``model``).

    Raises:
        FileNotFoundError: The weights file is missing (a broken install).
        ValueError: It is not this module's format.
    """
    data = json.loads(WEIGHTS_PATH.read_text(encoding="utf-8"))
    return Arbiter.from_json(data["model"])
