"""Metric functions against hand-computed values."""

import pytest

from kbqa.evals.metrics import (
    answer_in_context,
    answer_spans_in_context,
    answer_spans_in_normalized,
    exact_match,
    max_over_golds,
    normalize_answer,
    recall_at_k,
    token_f1,
)


def test_normalize_answer() -> None:
    assert normalize_answer("  ঢাকা। ") == "ঢাকা"
    assert normalize_answer("The Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("১৯৭১ সালে") == "1971 সালে"
    assert normalize_answer("হ্যাঁ") == "হ্যাঁ"


def test_exact_match() -> None:
    assert exact_match("ঢাকা।", "ঢাকা ") == 1.0
    assert exact_match("১৯৭১", "1971") == 1.0
    assert exact_match("ঢাকা শহর", "ঢাকা") == 0.0


def test_token_f1_hand_computed() -> None:
    # pred {ল্যুভর, জাদুঘরে, প্যারিস}, gold {ল্যুভর, জাদুঘরে}: P=2/3, R=1, F1=0.8
    assert token_f1("ল্যুভর জাদুঘরে প্যারিস", "ল্যুভর জাদুঘরে") == pytest.approx(0.8)
    # pred 1 token of gold 4: P=1, R=1/4, F1=0.4
    assert token_f1("Paris", "the city of Paris") == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))
    assert token_f1("", "") == 1.0
    assert token_f1("x", "") == 0.0
    assert token_f1("a b", "c d") == 0.0


def test_multi_span_gold_is_one_string() -> None:
    gold = "ঢাকা; চট্টগ্রাম"
    assert token_f1("ঢাকা, চট্টগ্রাম", gold) == 1.0
    assert token_f1("ঢাকা", gold) == pytest.approx(2 * 1 * 0.5 / 1.5)


def test_max_over_golds_and_unanswerable() -> None:
    assert (
        max_over_golds(token_f1, "Gina Garcia", ["Carol Marshall", "Gina Garcia"], abstained=False)
        == 1.0
    )
    assert max_over_golds(exact_match, "anything", [], abstained=True) == 1.0
    assert max_over_golds(exact_match, "a guess", [], abstained=False) == 0.0
    assert max_over_golds(token_f1, "x", ["x"], abstained=True) == 0.0


def test_recall_at_k_counts_distinct_documents() -> None:
    docs = ["a", "a", "b", "c"]
    assert recall_at_k(docs, "a", 1) == 1.0
    assert recall_at_k(docs, "b", 1) == 0.0
    assert recall_at_k(docs, "b", 2) == 1.0
    assert recall_at_k(docs, "z", 10) == 0.0


def test_answer_in_context() -> None:
    assert answer_in_context(["ল্যুভর জাদুঘরে"], "দুটি ফলক ল্যুভর জাদুঘরে আছে।") == 1.0
    assert answer_in_context(["ঢাকা"], "ঢাকাই শাড়ি") == 0.0  # whole tokens only
    assert answer_in_context([], "anything") == 0.0


def test_answer_spans_in_context_multi_span_and_yes_no() -> None:
    context = "ঢাকায় একটি ভবন ও একটি প্রাসাদ আছে।"
    assert answer_spans_in_context(["ভবন; প্রাসাদ"], context) == 1.0
    assert answer_spans_in_context(["ভবন; মন্দির"], context) == 0.0  # every span, not one
    assert answer_spans_in_context(["হ্যাঁ"], context) is None  # a verdict is in no passage
    assert answer_spans_in_context([], context) is None


@pytest.mark.parametrize(
    ("golds", "context"),
    [
        (["The Louvre"], "Two stelae are in the Louvre, Paris."),
        (["ভবন; প্রাসাদ"], "ঢাকায় একটি ভবন ও একটি প্রাসাদ আছে।"),
        (["১৮৫৯"], "তিনি 1859 সালে জন্মগ্রহণ করেন।"),
        (["Paris"], "Parisian cafes"),
        (["হ্যাঁ"], "কিছু"),
    ],
)
def test_answer_spans_in_normalized_matches_the_raw_form(golds: list[str], context: str) -> None:
    assert answer_spans_in_normalized(golds, normalize_answer(context)) == (
        answer_spans_in_context(golds, context)
    )
