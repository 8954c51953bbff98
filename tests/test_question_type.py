"""The Bangla yes/no classifier (issue 32, part 4b): ``কি`` asks *what* as often as it asks yes or
no, so yes/no is decided from the whole question by a small shipped model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kbqa.answers.language import question_type
from kbqa.answers.yes_no import (
    FEATURE_VERSION,
    MANIFEST_PATH,
    N_BUCKETS,
    WEIGHTS_PATH,
    YesNoClassifier,
    feature_vector,
    manifest,
    yes_no_classifier,
)

KI_SET = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "bn_ki.jsonl"
MIN_TYPED_RIGHT = 0.9


def _ki_set() -> list[tuple[str, bool]]:
    rows = [json.loads(line) for line in KI_SET.read_text(encoding="utf-8").splitlines() if line]
    return [(r["question"], bool(r["yes_no"])) for r in rows]


def _typed_right(classify: YesNoClassifier) -> float:
    rows = _ki_set()
    return sum(classify.is_yes_no(q) == gold for q, gold in rows) / len(rows)


def test_the_shipped_classifier_loads_with_its_manifest() -> None:
    model = yes_no_classifier()
    assert model.weights.shape == (N_BUCKETS,) and model.weights.dtype == np.float32
    assert np.isfinite(model.weights).all() and 0 < model.threshold < 1
    assert WEIGHTS_PATH.stat().st_size < 400_000
    about = manifest()
    assert about["feature_version"] == FEATURE_VERSION and about["n_buckets"] == N_BUCKETS
    assert "benchmarks/train_yes_no.py" in str(about["reproduce"])
    assert "/work/" not in MANIFEST_PATH.read_text(encoding="utf-8")  # no machine paths


def test_the_ki_set_is_balanced_and_typed_right() -> None:
    rows = _ki_set()
    yes_no = sum(gold for _, gold in rows)
    assert len(rows) >= 40 and yes_no >= 15 and len(rows) - yes_no >= 15
    assert _typed_right(yes_no_classifier()) >= MIN_TYPED_RIGHT


def test_the_ki_check_fails_for_a_classifier_that_says_yes_or_no_to_everything() -> None:
    zeros = np.zeros(N_BUCKETS, dtype=np.float32)
    assert _typed_right(YesNoClassifier(zeros, bias=10.0)) < MIN_TYPED_RIGHT
    assert _typed_right(YesNoClassifier(zeros, bias=-10.0)) < MIN_TYPED_RIGHT


@pytest.mark.parametrize(
    "question",
    [
        "মঙ্গলকাব্যের দ্বিতীয় অংশে কবি কি ব্যাখ্যা করেছেন ?",  # the two
        "বিশ্বাস এর আক্ষরিক অর্থ হল কি ?",
        "বাংলাদেশের জাতীয় পাখির নাম কি?",
        "সুকুমার রায় শিশুদের জন্য কী লিখেছেন?",
    ],
)
def test_ki_asking_what_is_not_yes_no(question: str) -> None:
    assert question_type(question) != "yes/no"


@pytest.mark.parametrize(
    "question",
    [
        "ঢাকা কি বাংলাদেশের রাজধানী?",
        "এই জেলায় কোনো বিশ্ববিদ্যালয় আছে কি?",
        "সত্যজিৎ রায় কি অস্কার পুরস্কার পেয়েছিলেন?",
        "পৃথিবী কি সূর্যের চারদিকে ঘোরে?",
        "লালবাগ কেল্লা মুঘল আমলে তৈরি - হ্যাঁ কি না?",
        "টেস্ট ম্যাচটি ড্র হয়েছে, তাই না?",
        "Is Dhaka the capital of Bangladesh?",
    ],
)
def test_clear_yes_no_questions_are_yes_no(question: str) -> None:
    assert question_type(question) == "yes/no"


def test_the_other_types_keep_their_rules() -> None:
    assert question_type("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?") == "date"
    assert question_type("গীতাঞ্জলি কে রচনা করেন?") == "person"
    assert question_type("জাদুঘরে কী কী নিদর্শন আছে?") == "list"
    assert question_type("What is the capital of France?") == "other"


def test_spelling_and_punctuation_do_not_decide_alone() -> None:
    model = yes_no_classifier()
    question = "মঙ্গলকাব্যের দ্বিতীয় অংশে কবি কি ব্যাখ্যা করেছেন ?"
    assert model.probability(question) == model.probability(question)  # deterministic
    assert model.is_yes_no(question.replace(" ?", "?")) == model.is_yes_no(question)
    assert model.probability("?") == 0.0 and len(feature_vector("")[0]) == 0


def test_weights_of_another_version_or_shape_are_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.npz"
    np.savez(other, weights=np.zeros(N_BUCKETS, np.float16), bias=0.0, threshold=0.5,
             feature_version=FEATURE_VERSION + 1)  # fmt: skip
    with pytest.raises(ValueError, match=f"feature_version {FEATURE_VERSION + 1}"):
        YesNoClassifier.load(other)
    np.savez(other, weights=np.zeros(7, np.float16), bias=0.0, threshold=0.5,
             feature_version=FEATURE_VERSION)  # fmt: skip
    with pytest.raises(ValueError, match=r"shape \(7,\)"):
        YesNoClassifier.load(other)
