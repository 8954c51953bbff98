"""Follow-ups in a thread: rewritten to stand alone from the last turn, with history kept by a
checkpointer; without one every question starts fresh."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kbqa.answers.followup import (
    LastTurn,
    is_followup,
    question_subject,
    standalone_question,
    topic_title,
)
from kbqa.context import Context
from kbqa.graph import build_graph, graph
from kbqa.state import per_question_reset

TAGORE = LastTurn("গীতাঞ্জলি কে লিখেছেন?", "রবীন্দ্রনাথ ঠাকুর", "person", "গীতাঞ্জলি")
EIFFEL = LastTurn("When was it built?", "1889", "date", "Eiffel Tower")
STELE = LastTurn("কোন জাদুঘরে সারগনিক বিজয় ফলক আছে?", "ল্যুভর", "other", "সারগনের বিজয় ফলক")


@pytest.mark.parametrize(
    ("question", "last", "expected"),
    [
        ("আর তিনি কবে জন্মেছিলেন?", TAGORE, "রবীন্দ্রনাথ ঠাকুর কবে জন্মেছিলেন?"),
        ("তাঁর পিতার নাম কী?", TAGORE, "রবীন্দ্রনাথ ঠাকুরের পিতার নাম কী?"),
        ("এর অর্থ কী?", TAGORE, "গীতাঞ্জলির অর্থ কী?"),  # a thing: the page, not the person
        ("And when was he born?",
         LastTurn("Who wrote Gitanjali?", "Rabindranath Tagore", "person", "Gitanjali"),
         "When was Rabindranath Tagore born?"),
        ("How tall is it?", LastTurn("When was it built?", "1889", "date", "Eiffel Tower"),
         "How tall is Eiffel Tower?"),
        # a demonstrative and its noun: the last answer when the last question asked for
        # that noun, the page when its title holds the noun; the noun's case ending is kept
        ("এই জাদুঘর কোন শহরে অবস্থিত?", STELE, "ল্যুভর জাদুঘর কোন শহরে অবস্থিত?"),
        ("আর এই জাদুঘরের প্রতিষ্ঠাতা কে?", STELE, "ল্যুভর জাদুঘরের প্রতিষ্ঠাতা কে?"),
        ("এই ফলকটি কত পুরনো?", STELE, "সারগনের বিজয় ফলকটি কত পুরনো?"),
        ("এই বছর কী হয়েছিল?", STELE, "এই বছর কী হয়েছিল?"),  # echoes nothing: kept
        ("Where is this museum?",
         LastTurn("Which museum holds the stele?", "the Louvre", "other", "Victory Stele"),
         "Where is the Louvre museum?"),
        ("How old is this stele?",
         LastTurn("Which museum holds the stele?", "the Louvre", "other", "Victory Stele"),
         "How old is Victory Stele?"),
        ("এই নদীতে কী মাছ পাওয়া যায়?", LastTurn("ঢাকা কোন নদীর তীরে?", "বুড়িগঙ্গা", "location", "ঢাকা"),
         "বুড়িগঙ্গা নদীতে কী মাছ পাওয়া যায়?"),  # নদীর / নদীতে: one noun, two endings
        ("এই জাদুঘর কবে তৈরি হয়?",
         LastTurn("কোন জাদুঘরে মোনালিসা আছে?", "ল্যুভর জাদুঘরে", "other", "মোনালিসা"),
         "ল্যুভর জাদুঘর কবে তৈরি হয়?"),  # the question's case ending, not the answer's
        ("এই জাদুঘর কবে তৈরি হয়?",
         LastTurn("কোনো জাদুঘরে কি মোনালিসা আছে?", "হ্যাঁ", "yes/no", "মোনালিসা"),
         "এই জাদুঘর কবে তৈরি হয়?"),  # কোনো is "any", not "which"
        ("When was this museum built?",
         LastTurn("What is the name of the museum which holds the Mona Lisa?", "the Louvre",
                  "other", "Mona Lisa"),
         "When was the Louvre museum built?"),
        ("How tall is this tow?", LastTurn("When was it built?", "1889", "date", "Eiffel Tower"),
         "How tall is Eiffel Tower tow?"),  # "tow" is not "tower": only "this" is replaced
        # "this" before an adjective, an article or an adverb is the pronoun of a thing (a
        # rule leaving "this" + an unknown word alone lost all of these)
        ("Why is this famous?", EIFFEL, "Why is Eiffel Tower famous?"),
        ("Is this the tallest tower in Europe?", EIFFEL,
         "Is Eiffel Tower the tallest tower in Europe?"),
        ("Was this ever moved?", EIFFEL, "Was Eiffel Tower ever moved?"),
        ("ঢাকা কোথায়?", TAGORE, "ঢাকা কোথায়?"),  # not a follow-up
        ("আর তিনি কবে জন্মেছিলেন?", None, "আর তিনি কবে জন্মেছিলেন?"),  # nothing to refer to
        ("আর তিনি কবে জন্মেছিলেন?", LastTurn("কে?", "", "person", ""),
         "আর তিনি কবে জন্মেছিলেন?"),  # the last turn abstained and cited nothing
    ],
)  # fmt: skip
def test_standalone_question(question: str, last: LastTurn | None, expected: str) -> None:
    language = "en" if question.isascii() else "bn"
    assert standalone_question(question, language, last) == expected


def test_the_topic_is_the_cited_page_the_question_names() -> None:
    titles = ["এশিয়া", "রবীন্দ্রনাথ ঠাকুর"]  # the answer was read from the Asia page
    assert topic_title("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", titles) == "রবীন্দ্রনাথ ঠাকুর"
    assert topic_title("রবীন্দ্রনাথ ঠাকুরের জন্ম কোথায়?", titles) == "রবীন্দ্রনাথ ঠাকুর"
    assert topic_title("নোবেল পুরস্কার কবে চালু হয়?", titles) == "এশিয়া"
    assert topic_title("x?", []) == ""


def test_a_pronoun_refers_to_what_the_last_question_asked_about_not_the_page() -> None:
    """Issue 36 item 3: after "আহসান মঞ্জিল কোন নদীর তীরে অবস্থিত?" answered from a page on
    tourism, "এটি কবে প্রতিষ্ঠিত হয়?" became "বাংলাদেশের পর্যটন কবে প্রতিষ্ঠিত হয়?"."""
    last = LastTurn("আহসান মঞ্জিল কোন নদীর তীরে অবস্থিত?", "বুড়িগঙ্গা", "location",
                    "বাংলাদেশের পর্যটন")  # fmt: skip
    assert standalone_question("এটি কবে প্রতিষ্ঠিত হয়?", "bn", last) == (
        "আহসান মঞ্জিল কবে প্রতিষ্ঠিত হয়?"
    )
    bridge = LastTurn("পদ্মা সেতুর দৈর্ঘ্য কত?", "৬.১৫ কিলোমিটার", "number", "বাংলাদেশের সেতু")
    assert standalone_question("এটি কবে উদ্বোধন করা হয়?", "bn", bridge) == (
        "পদ্মা সেতু কবে উদ্বোধন করা হয়?"
    )
    opera = LastTurn("Who designed the Sydney Opera House?", "Jørn Utzon", "person",
                     "Modern architecture")  # fmt: skip
    assert standalone_question("When did it open?", "en", opera) == (
        "When did Sydney Opera House open?"
    )
    # the page stays the topic when the question names it or the answer is its subject
    paris = LastTurn("What is the capital of France?", "Paris", "location", "Paris")
    assert standalone_question("Which river flows through it?", "en", paris).endswith("Paris?")
    assert question_subject("কে গীতাঞ্জলি লিখেছেন?", "bn") == ""  # no subject before কে
    assert question_subject("কক্সবাজার সমুদ্র সৈকতের দৈর্ঘ্য কত?", "bn") == "কক্সবাজার সমুদ্র সৈকত"


def test_followups_a_break_it_trial_broke() -> None:
    tower = LastTurn("WHEN WAS THE EIFFEL TOWER BUILT?", "1889", "date", "Eiffel Tower")
    assert standalone_question("WHEN WAS IT BUILT?", "en", tower) == "WHEN WAS Eiffel Tower BUILT?"
    tagore = LastTurn("Who wrote Gitanjali?", "Rabindranath Tagore", "person", "Gitanjali")
    assert standalone_question("and", "en", tagore) == "and"  # not an empty question
    assert standalone_question("আর", "bn", tagore) == "আর"
    unanswered = LastTurn("Who wrote Gitanjali?", "", "person", "Gitanjali")
    assert standalone_question("When was he born?", "en", unanswered) == "When was he born?"
    odd = LastTurn("Where is the old lighthouse?", "?", "location", "Lighthouse")
    assert "?" not in standalone_question("What is there?", "en", odd)[:-1]
    # a new user's: the page's title is a file name ("tower"), the question names it in full
    named = LastTurn("Who built the Brightwater Tower?", "Mara Quill", "person", "tower")
    assert standalone_question("When was it built?", "en", named) == (
        "When was Brightwater Tower built?"
    )


def test_a_word_written_with_a_zero_width_joiner_stays_one_word() -> None:
    """Found on the follow-up conversations (benchmarks/followup_answers.py): a name with a
    ZWNJ came back with a space in its place, so the rewrite asked about another word."""
    rab = LastTurn("র\u200d্যাবের সদর দপ্তর কোথায়?", "ঢাকা", "location", "বাংলাদেশ")
    assert standalone_question("এটি কবে গঠিত হয়?", "bn", rab) == "র\u200d্যাব কবে গঠিত হয়?"
    utsab = LastTurn("উদ্\u200cযাপন কমিটির প্রধান কে?", "রহিম", "person", "উৎসব")
    assert "উদ্\u200cযাপন কমিটি" in standalone_question("এর সদস্য কতজন?", "bn", utsab)


def test_a_followup_keeps_its_own_question_type() -> None:
    """The rewrite must not change a "where" question's type: the answer put in for "তিনি" may
    hold a question word of its own (``কে এম`` is the initials K. M.)."""
    from kbqa.answers.language import question_type
    from kbqa.nodes import classify

    turn = {"question": "বাংলাদেশের প্রথম স্পিকার কে ছিলেন?", "asked": "",
            "answer": "কে এম ওবায়দুর রহমান", "abstained": False, "question_type": "person",
            "title": "জাতীয় সংসদ"}  # fmt: skip
    out = classify({"question": "তিনি কোথায় জন্মগ্রহণ করেন?", "history": [turn]}, None)
    assert out["question"] == "কে এম ওবায়দুর রহমান কোথায় জন্মগ্রহণ করেন?"
    assert question_type(out["question"]) == "person"  # what the rewrite alone would say
    assert out["question_type"] == "location"


def test_plain_questions_are_not_followups() -> None:
    assert not is_followup("Who wrote Gitanjali?", "en")
    assert not is_followup("বাংলাদেশের রাজধানী কোথায়?", "bn")
    assert is_followup("and Dhaka?", "en")


def test_a_thread_rewrites_a_followup_from_its_last_turn(both_index: Path) -> None:
    threaded = build_graph(checkpointer=InMemorySaver())
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", cross_check="off",
                  model="fake/script:১৯১৩|কলকাতায়", web_search="off")  # fmt: skip
    config = {"configurable": {"thread_id": "t1"}}
    first = threaded.invoke({"question": "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?"},
                            config, context=ctx)  # fmt: skip
    assert first["answer"] == "১৯১৩" and first["asked"] == ""
    assert first["history"][-1]["title"] == "রবীন্দ্রনাথ ঠাকুর"
    # "তিনি" after a date question: the page the answer came from
    second = threaded.invoke({"question": "আর তিনি কোথায় জন্মগ্রহণ করেন?"}, config, context=ctx)
    assert second["question"] == "রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন?"
    assert second["asked"] == "আর তিনি কোথায় জন্মগ্রহণ করেন?"
    assert second["route"][:2] == ["classify", "classify: follow-up rewritten"]
    assert [t["question"] for t in second["history"]] == [
        "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", "রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন?"
    ]  # fmt: skip
    assert second["history"][-1]["answer"] == "কলকাতায়"
    # another thread, and the plain graph, start with no history
    other = threaded.invoke({"question": "আর তিনি কবে জন্মেছিলেন?"},
                            {"configurable": {"thread_id": "t2"}}, context=ctx)  # fmt: skip
    assert other["asked"] == "" and len(other["history"]) == 1
    plain = graph.invoke({"question": "আর তিনি কবে জন্মেছিলেন?"}, context=ctx)
    assert plain["asked"] == "" and len(plain["history"]) == 1


def test_a_question_on_a_thread_reports_none_of_the_last_ones_values(both_index: Path) -> None:
    """A field the second question's route does not set (the cross-check's coverage, skipped
    for English) is what a fresh run reports, not the last question's."""
    threaded = build_graph(checkpointer=InMemorySaver())
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model="fake/script:১৯১৩|Seine",
                  web_search="off")  # fmt: skip
    config = {"configurable": {"thread_id": "coverage"}}
    first = threaded.invoke({"question": "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?"},
                            config, context=ctx)  # fmt: skip
    assert first["question_coverage"] is not None  # the cross-check ran on a Bangla question
    english = {"question": "Which river does Paris lie on?"}
    second = threaded.invoke(english, config, context=ctx)
    fresh = graph.invoke(english, context=replace(ctx, model="fake/script:Seine"))
    assert "cross_check: skipped (en)" in second["route"]
    assert second["question_coverage"] is None and fresh.get("question_coverage") is None
    for key in per_question_reset():
        assert second.get(key) == fresh.get(key) or key in ("timings",), key


def test_every_output_key_is_reset_per_question_or_kept_on_purpose() -> None:
    from kbqa.state import KEPT_ACROSS_QUESTIONS, OutputState

    assert set(per_question_reset()) | KEPT_ACROSS_QUESTIONS == set(OutputState.__annotations__)
    assert not set(per_question_reset()) & KEPT_ACROSS_QUESTIONS
    first, second = per_question_reset(), per_question_reset()
    first["sources"].append("x")  # fresh lists on each call
    assert second["sources"] == []
