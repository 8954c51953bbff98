"""The cross-check's learned arbiter (:mod:`kbqa.answers.arbiter`): its features, its weights
file, the ``arbiter`` rule of :func:`kbqa.answers.cross_check.decide`, and the fit of
``benchmarks/train_arbiter.py`` on pairs made here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from kbqa.answers import arbiter as arbiter_module
from kbqa.answers.arbiter import (
    FEATURES,
    Arbiter,
    arbiter_features,
    differ,
    shipped_arbiter,
)
from kbqa.answers.cross_check import decide
from kbqa.answers.extract import Extraction
from kbqa.prompts import ABSTENTION_PHRASE as ABST

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import train_arbiter

QUESTION = "কাজী নজরুল ইসলাম কত সালে জন্মগ্রহণ করেন?"
SENTENCE = "কাজী নজরুল ইসলাম ১৮৯৯ সালে এক দরিদ্র মুসলিম পরিবারে জন্মগ্রহণ করেন।"
YEAR = Extraction("১৮৯৯", "year", 7, 5.0, SENTENCE, 1.0)


def feature(x: np.ndarray, name: str) -> float:
    return float(x[FEATURES.index(name)])


def test_features_describe_the_pair() -> None:
    x = arbiter_features(QUESTION, "date", "এক দরিদ্র মুসলিম পরিবারে", 0.2, YEAR)
    assert x.shape == (len(FEATURES),)
    assert feature(x, "abstention_probability") == 0.2
    assert feature(x, "coverage") == 1.0
    assert feature(x, "agrees") == 1.0  # every word of the answer is in the sentence
    assert feature(x, "reader_digit") == 0.0 and feature(x, "extractor_digit") == 1.0
    assert feature(x, "numeric_extractor_digit") == 1.0
    assert feature(x, "type=date") == 1.0 and feature(x, "type=person") == 0.0
    assert feature(x, "method=pattern") == 1.0 and feature(x, "method=overlap") == 0.0
    assert feature(x, "reader_words_log") == pytest.approx(np.log1p(4))
    # a span that repeats the question is marked; one inside the other too
    y = arbiter_features(QUESTION, "other", "নজরুল ইসলাম", None, YEAR)
    assert feature(y, "reader_repeats_question") == 1.0
    assert feature(y, "abstention_probability") == 0.0  # no probability counts as 0
    z = arbiter_features(QUESTION, "date", "১৮৯৯ সালে", 0.1, YEAR)
    assert feature(z, "extractor_inside_reader") == 1.0
    assert feature(z, "reader_inside_extractor") == 0.0


def test_the_same_answer_and_a_yes_no_prior_are_never_asked() -> None:
    assert not differ("১৮৯৯।", YEAR) and differ("১৯০০", YEAR)
    assert not differ("না", Extraction("হ্যাঁ", "yes/no", 7, 5.0, SENTENCE, 1.0))
    always = Arbiter(np.zeros(len(FEATURES)), np.ones(len(FEATURES)), np.zeros(len(FEATURES)), 9.0)
    assert always.prefers_extractor(QUESTION, "date", "১৯০০", 0.0, YEAR)
    assert not always.prefers_extractor(QUESTION, "date", " ১৮৯৯ ", 0.0, YEAR)


def test_the_arbiter_rule_replaces_the_answer_it_prefers(monkeypatch: pytest.MonkeyPatch) -> None:
    w = np.zeros(len(FEATURES))
    w[FEATURES.index("numeric_extractor_digit")] = 10.0  # prefers a dated span on a date question
    dated = Arbiter(np.zeros(len(FEATURES)), np.ones(len(FEATURES)), w, -5.0)
    monkeypatch.setattr(arbiter_module, "shipped_arbiter", lambda: dated)
    monkeypatch.setattr("kbqa.answers.cross_check.shipped_arbiter", lambda: dated)
    args = ("১৯০০", False, YEAR, ABST, "date")
    assert decide(*args, question=QUESTION) == ("১৮৯৯", False, "cross_check: arbiter")
    kept = "cross_check: disagrees, kept"
    assert decide(*args, question=QUESTION, rules=("date",))[2] == kept
    assert decide(*args, rules=("date", "arbiter"))[2] == kept  # no question: not asked
    assert decide("১৯০০", False, YEAR, ABST, "person", question=QUESTION, rules=("arbiter",)) == (
        "১৯০০",
        False,
        kept,
    )
    # an abstention is left to the other rules
    assert decide(ABST, True, YEAR, ABST, "date", question=QUESTION, rules=("arbiter",)) == (
        ABST,
        True,
        "cross_check: kept abstention",
    )


def test_the_shipped_weights_load_and_decide() -> None:
    arb = shipped_arbiter()
    assert 0.0 < arb.threshold < 1.0
    assert arb.weights.shape == (len(FEATURES),) and np.any(arb.weights != 0)
    p = arb.probability(arbiter_features(QUESTION, "date", "এক দরিদ্র", 0.1, YEAR))
    assert 0.0 < p < 1.0
    manifest = json.loads(arbiter_module.WEIGHTS_PATH.read_text(encoding="utf-8"))
    assert manifest["figures"]["labelled_pairs"] > 100
    assert "/" not in json.dumps(manifest["trained_on"]).replace("\\/", "")  # no machine paths


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"feature_version": 0}, "feature version"),
        ({"features": ["x"]}, "other features"),
        ({"weights": [1.0]}, "'weights' is not"),
        ({"mean": [float("nan")] * len(FEATURES)}, "'mean' is not"),
        ({"scale": [0.0] * len(FEATURES)}, "positive"),
    ],
)
def test_weights_of_another_shape_are_refused(change: dict[str, object], message: str) -> None:
    data = shipped_arbiter().to_json() | change
    with pytest.raises(ValueError, match=message):
        Arbiter.from_json(data)


def _pair(i: int, useful: float, rng: np.random.Generator) -> train_arbiter.Pair:
    x = rng.normal(size=len(FEATURES))
    x[FEATURES.index("coverage")] = useful
    better = useful > 0.5
    return train_arbiter.Pair(
        qid=str(i), doc=f"d{i % 40}", answerable=True, features=x,
        reader_f1=0.0 if better else 1.0, extractor_f1=1.0 if better else 0.0, final_f1=0.0,
    )  # fmt: skip


def test_the_fit_learns_which_span_scores_higher() -> None:
    rng = np.random.default_rng(0)
    pairs = [_pair(i, float(rng.uniform()), rng) for i in range(200)]
    arb, figures = train_arbiter.fit(pairs, folds=5)
    assert figures["labelled_pairs"] == 200
    assert arb.weights[FEATURES.index("coverage")] == max(arb.weights, key=abs)
    high = np.zeros(len(FEATURES))
    high[FEATURES.index("coverage")] = 0.95
    low = high.copy()
    low[FEATURES.index("coverage")] = 0.05
    assert arb.probability(high) > arb.threshold > arb.probability(low)
    assert figures["cross_validated_f1_gain_per_answerable_pair"] > 0.3


def test_the_fit_refuses_too_few_pairs() -> None:
    rng = np.random.default_rng(1)
    with pytest.raises(train_arbiter.InputError, match="too few"):
        train_arbiter.fit([_pair(i, 0.9, rng) for i in range(5)], folds=5)
