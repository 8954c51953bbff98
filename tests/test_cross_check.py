"""The cross-check's rules (:func:`kbqa.answers.cross_check.decide`), on hand-made extractions.

The graph routes through the node are in ``test_routes.py``; these pin each rule's decision.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa.answers.cross_check import (
    ABSTAIN_BELOW,
    ANSWER_FROM,
    RULES,
    decide,
    prefer_extractor,
)
from kbqa.answers.extract import Extraction
from kbqa.context import Context
from kbqa.prompts import ABSTENTION_PHRASE as ABST

SENTENCE = "এখানে পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে সমতল পৃথিবী বলা হয়।"


def found(answer: str, coverage: float = 1.0, sentence: str = SENTENCE) -> Extraction:
    return Extraction(answer, "overlap", 3, 4.0, sentence, coverage)


SPAN = found("পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে")


@pytest.mark.parametrize(
    ("answer", "qtype", "expected"),
    [
        # an untyped question: the reader stopped early, the extractor's wider span is kept
        ("গোলাকার", "other", ("পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে", "agrees, extractor's span")),
        # ... but not when the extractor's span lies inside the reader's answer
        (
            "এখানে পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে",
            "other",
            ("এখানে পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে", "agrees"),
        ),
        # a list question takes the extractor's run of items
        ("সমতল", "list", ("পৃথিবী গোলাকার নয়, বরং সমতল, এই ধারণাকে", "agrees, extractor's span")),
        # a typed question keeps the reader's agreeing answer
        ("গোলাকার", "location", ("গোলাকার", "agrees")),
        ("গোলাকার", "person", ("গোলাকার", "agrees")),
    ],
)
def test_an_agreeing_answer_takes_the_wider_span_where_it_measured_better(
    answer: str, qtype: str, expected: tuple[str, str]
) -> None:
    out = decide(answer, False, SPAN, ABST, qtype)
    assert (out[0], out[1], out[2]) == (expected[0], False, f"cross_check: {expected[1]}")


def test_a_yes_no_question_is_answered_yes_or_no() -> None:
    yes = found("হ্যাঁ")
    assert decide("পৃথিবী", False, yes, ABST, "yes/no") == (
        "হ্যাঁ", False, "cross_check: agrees, extractor's span"
    )  # fmt: skip
    assert decide("হ্যাঁ", False, yes, ABST, "yes/no") == ("হ্যাঁ", False, "cross_check: agrees")
    # the reader's "no" shares no word with the extractor's "yes": rule 2 replaces it (on
    # BanglaRQA the tuned reader's "না" was right for 2 of 11 such questions, seed 0)
    assert decide("না", False, yes, ABST, "yes/no") == ("হ্যাঁ", False, "cross_check: extractor")
    assert prefer_extractor("পৃথিবী", yes, "yes/no")
    assert not prefer_extractor(" No ", yes, "yes/no") and not prefer_extractor(
        "yes", yes, "yes/no"
    )


def test_a_disagreeing_answer_is_replaced_whatever_the_type() -> None:
    for qtype in ("location", "other", "yes/no", "list"):
        assert decide("ঢাকা", False, SPAN, ABST, qtype) == (
            SPAN.answer,
            False,
            "cross_check: extractor",
        )


def test_coverage_rules_come_before_agreement() -> None:
    low = found("সমতল", coverage=ABSTAIN_BELOW - 0.01)
    assert decide("সমতল", False, low, ABST, "other") == (ABST, True, "cross_check: abstained")
    high = found("সমতল", coverage=ANSWER_FROM)
    assert decide(ABST, True, high, ABST, "other") == ("সমতল", False, "cross_check: answered")
    mid = found("সমতল", coverage=ANSWER_FROM - 0.01)
    assert decide(ABST, True, mid, ABST, "other") == (ABST, True, "cross_check: kept abstention")
    assert decide("সমতল", False, None, ABST) == (ABST, True, "cross_check: abstained")


def test_the_default_question_type_is_untyped() -> None:
    assert decide("গোলাকার", False, SPAN, ABST) == decide("গোলাকার", False, SPAN, ABST, "other")


def test_yes_and_no_are_recognised_through_punctuation_and_format_characters() -> None:
    yes = found("হ্যাঁ")
    for said in ("হ্যাঁ।", "Yes.", "না।", "হ্যা\u200cঁ", "হাঁ", " No! "):
        assert not prefer_extractor(said, yes, "yes/no"), said


def test_a_blank_extractor_span_is_no_span_but_its_sentence_still_counts() -> None:
    blank = found(" ... ", coverage=0.9)
    assert decide("সমতল", False, blank, ABST, "other") == ("সমতল", False, "cross_check: no span")
    assert decide(ABST, True, blank, ABST, "other") == (ABST, True, "cross_check: kept abstention")
    low = found(" । ", coverage=0.1)
    assert decide("সমতল", False, low, ABST, "other") == (ABST, True, "cross_check: abstained")


BORN = found("১৮৯৯", sentence="তিনি ১৮৯৯ সালে এক দরিদ্র মুসলিম পরিবারে জন্মগ্রহণ করেন।")
"""The extractor's dated span, in a sentence that also holds the reader's undated answer."""


def test_a_rule_left_out_keeps_the_answer_it_would_have_changed() -> None:
    low = found("সমতল", coverage=ABSTAIN_BELOW - 0.01)
    high = found("সমতল", coverage=ANSWER_FROM)
    cases = {  # rule: (the decide() arguments, the answer the rule gives)
        "abstain": (("সমতল", False, low, ABST, "other"), (ABST, True)),
        "extractor": (("ঢাকা", False, SPAN, ABST, "location"), (SPAN.answer, False)),
        "wider-span": (("গোলাকার", False, SPAN, ABST, "other"), (SPAN.answer, False)),
        "answer": ((ABST, True, high, ABST, "other"), ("সমতল", False)),
        "date": (("এক দরিদ্র মুসলিম পরিবারে", False, BORN, ABST, "date"), ("১৮৯৯", False)),
    }
    assert set(cases) == set(RULES)
    for rule, (args, changed) in cases.items():
        assert decide(*args)[:2] == changed, rule
        others = tuple(r for r in RULES if r != rule)
        assert decide(*args, rules=others)[:2] == (args[0], args[1]), rule
        assert decide(*args, rules=())[:2] == (args[0], args[1]), rule


def test_the_rules_setting_names_rules_and_refuses_others(tiny_index: Path) -> None:
    from kbqa.answers.cross_check import parse_rules

    assert parse_rules("all") == RULES and parse_rules("none") == ()
    assert parse_rules(" answer , abstain") == ("abstain", "answer")  # in RULES order
    assert parse_rules("Wider  Span, ABSTAIN") == ("abstain", "wider-span")  # case, blanks
    for bad in ("", ",", "all,none", "extractors", "abstain;answer", "x" * 5000):
        with pytest.raises(ValueError, match="comma-separated rules of"):
            parse_rules(bad)
    with pytest.raises(ValueError, match="cross_check_rules"):
        Context(index_dir=str(tiny_index), cross_check_rules="extractors")


def test_the_graph_applies_only_the_rules_it_is_given(tiny_index: Path) -> None:
    """A reader answer that shares no word with the extractor's span is replaced with every
    rule on, and kept when ``cross_check_rules`` leaves ``extractor`` out."""
    from kbqa.graph import graph

    question = "বাংলাদেশের রাজধানী কোথায়?"
    base = dict(index_dir=str(tiny_index), embedder="fake/hash", model="fake/script:প্যারিস",
                web_search="off", max_retries=0)  # fmt: skip
    every = graph.invoke({"question": question}, context=Context(**base, cross_check_rules="all"))
    default = graph.invoke({"question": question}, context=Context(**base))  # rules: none
    kept = graph.invoke({"question": question},
                        context=Context(**base, cross_check_rules="abstain,answer"))  # fmt: skip
    assert "cross_check: extractor" in every["route"], every["route"]
    assert every["answered_by"] == "cross_check" and every["answer"] != "প্যারিস"
    assert "cross_check: disagrees, kept" in kept["route"], kept["route"]
    assert "cross_check: disagrees, kept" in default["route"], default["route"]
    assert kept["answered_by"] != "cross_check"  # the reader's answer went on to finalize


def test_a_date_question_answered_without_a_digit_takes_the_extractors_dated_span() -> None:
    """A new user's finding: asked the year Nazrul was born, the reader answered with the
    phrase beside the year; the extractor's span held the year."""
    said = "এক দরিদ্র মুসলিম পরিবারে"
    year = BORN
    assert decide(said, False, year, ABST, "date", rules=("date",)) == (
        "১৮৯৯", False, "cross_check: date")  # fmt: skip
    assert decide(said, False, found("1899"), ABST, "date", rules=("date",))[0] == "1899"
    kept = [
        (said, year, "number"),  # only dates: a count may be a word (অষ্টম, দুই)
        ("১৮৯৯ সালে", found("১৯০১"), "date"),  # the answer holds a digit: left to the reader
        ("বৈশাখ মাসে", found("প্রতি বছর"), "date"),  # the span has no digit either
    ]
    for answer, span, qtype in kept:
        assert decide(answer, False, span, ABST, qtype, rules=("date",))[0] == answer
    assert decide(said, False, year, ABST, "date", rules=())[0] == said
