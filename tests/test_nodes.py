"""Abstention detection, answer clean-up, question classification and token budgeting."""

import pytest

from kbqa.answers.abstention import is_abstention, settled_abstention
from kbqa.answers.cleanup import clean_answer
from kbqa.answers.language import detect_language, question_type
from kbqa.answers.reading import stream_until_abstention
from kbqa.llm.fake import ScriptedChatModel
from kbqa.prompts import ABSTENTION_PHRASE, ABSTENTION_PHRASE_EN, Passage
from kbqa.prompts.budget import fit_prompt

P = ABSTENTION_PHRASE


@pytest.mark.parametrize(
    "answer",
    [
        P,
        f" {P}।",
        "context-এ তথ্য নেই",
        "তথ্য নেই",
        "এই বিষয়ে জানা নেই।",
        "I don't know.",
        "Unknown",
        "The context does not mention it",
        "",
        "   ",
        "not mentioned in the text",
        "বাংলাদেশের রাজধানী কোথায়?",  # the question echoed back
    ],
)
def test_abstentions_are_detected(answer: str) -> None:
    assert is_abstention(answer, P, question="বাংলাদেশের রাজধানী কোথায়?")


@pytest.mark.parametrize(
    "answer", ["ঢাকা", "১৯৭১ সালে", "Unknown Soldier memorial", "না", "No", "তথ্যপ্রযুক্তি"]
)
def test_answers_are_not_abstentions(answer: str) -> None:
    assert not is_abstention(answer, P, question="প্রশ্ন?")


@pytest.mark.parametrize("phrase", [P, "N/A", "Not in the KB"])
@pytest.mark.parametrize("answer", [ABSTENTION_PHRASE_EN, "no information in the context.", P])
def test_both_languages_fixed_phrases_are_abstentions_whatever_the_runs_phrase(
    answer: str, phrase: str
) -> None:
    assert is_abstention(answer, phrase, question="What is the boiling point of mercury?")
    assert not is_abstention("Information Age", phrase)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("উত্তর: ঢাকা।", "ঢাকা"),
        (' "Paris".\nMore text', "Paris"),
        ("Answer: **1903**", "1903"),
        (" [3] Luke Kuechly", "Luke Kuechly"),
        ("[12]: ঢাকা", "ঢাকা"),
        ("\n\n  রবীন্দ্রনাথ ঠাকুর ", "রবীন্দ্রনাথ ঠাকুর"),
    ],
)
def test_clean_answer(raw: str, clean: str) -> None:
    assert clean_answer(raw) == clean


def test_clean_answer_caps_length() -> None:
    assert len(clean_answer("শব্দ " * 100, max_chars=50)) <= 50


@pytest.mark.parametrize(
    ("q", "lang", "qtype"),
    [
        ("বাংলাদেশের রাজধানী কোথায়?", "bn", "location"),
        ("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পান?", "bn", "date"),
        ("গীতাঞ্জলি কে রচনা করেন?", "bn", "person"),
        ("বাংলাদেশে কতটি জেলা আছে?", "bn", "number"),
        ("পদ্মা কি একটি নদী?", "bn", "yes/no"),
        ("বিভাগের ইমেইল ঠিকানা কী?", "bn", "email"),
        ("রেল পরিবহনের প্রধান উপাদান গুলো কি কি?", "bn", "list"),
        ("তিনি কোন কোন বিশ্ববিদ্যালয়ে শিক্ষকতা করেন?", "bn", "list"),
        ("Who wrote Hamlet?", "en", "person"),
        ("When did the war end?", "en", "date"),
        ("Where is Paris?", "en", "location"),
        ("How many moons does Mars have?", "en", "number"),
        ("Is Paris in France?", "en", "yes/no"),
        ("What is the capital of France?", "en", "other"),
    ],
)
def test_classify(q: str, lang: str, qtype: str) -> None:
    assert detect_language(q) == lang
    assert question_type(q) == qtype


def _passages() -> list[tuple[int, Passage]]:
    return [
        (1, Passage("a", "alpha " * 50)),
        (1, Passage("b", "beta " * 50)),
        (2, Passage("c", "gamma " * 50)),
        (3, Passage("d", "delta " * 50)),
    ]


def test_budget_keeps_everything_when_it_fits() -> None:
    model = ScriptedChatModel.from_name("fake/abstain")
    _, kept, tokens = fit_prompt(model, "q?", _passages(), 10_000)
    assert kept == [0, 1, 2, 3]
    assert tokens <= 10_000


def test_budget_drops_lowest_ranked_first() -> None:
    model = ScriptedChatModel.from_name("fake/abstain")
    full = fit_prompt(model, "q?", _passages(), 10_000)[2]
    _, kept, tokens = fit_prompt(model, "q?", _passages(), full - 40)
    assert kept == [0, 1, 2]  # rank 3 dropped
    _, kept, tokens = fit_prompt(model, "q?", _passages(), full - 120)
    assert kept == [0, 1]  # rank 1 and its padding stay together
    assert tokens <= full - 120


def test_budget_truncates_a_single_passage() -> None:
    model = ScriptedChatModel.from_name("fake/abstain")
    passages = [(1, Passage("a", "word " * 2000))]
    _, kept, tokens = fit_prompt(model, "q?", passages, 500)
    assert kept == [0] and tokens <= 500


def test_budget_too_small_for_the_question() -> None:
    model = ScriptedChatModel.from_name("fake/abstain")
    with pytest.raises(ValueError, match="shorten the question or raise n_ctx"):
        fit_prompt(model, "q " * 1000, _passages(), 50)


@pytest.mark.parametrize(
    ("reply", "kept"),
    [
        # the fixed phrase and paraphrases stop the stream where they are complete
        (f"{P}, কারণ প্রসঙ্গে এই বিষয়ে কিছুই বলা নেই", f"{P}, "),
        ("I don't know. The context talks about something else entirely", "I don't know. "),
        ("The answer is not mentioned in the context at all", "The answer is not mentioned "),
        # answers stream to the end
        ("No, it does not contain gluten", "No, it does not contain gluten"),
        ("ঢাকা বিশ্ববিদ্যালয়", "ঢাকা বিশ্ববিদ্যালয়"),
        ("unknown soldier", "unknown soldier"),  # 'unknown' alone abstains, not as a prefix
    ],
)
def test_generation_stops_at_a_settled_abstention(reply: str, kept: str) -> None:
    from langchain_core.messages import HumanMessage

    model = ScriptedChatModel(script=[reply])
    text, probability = stream_until_abstention(model, [HumanMessage("q")], None, 64, P)
    assert text == kept and probability is None  # a scripted model decides no threshold
    assert model.streamed == len(kept.split())
    # stopping early never changes the verdict on the whole reply
    assert is_abstention(clean_answer(text), P) == is_abstention(clean_answer(reply), P)


def test_settled_abstention_needs_the_first_line() -> None:
    assert not settled_abstention("", P)
    assert not settled_abstention("ঢাকা\n(not mentioned elsewhere)", P)
    assert settled_abstention("Answer:\nতথ্য নেই", P)


def test_passage_numbers_around_a_labelled_answer() -> None:
    assert clean_answer("Answer: [2] Dhaka [2].") == "Dhaka"


def test_an_empty_abstention_phrase_does_not_match_everything() -> None:
    assert not is_abstention("Dhaka", "") and not settled_abstention("Dhaka", "")
    assert is_abstention("I don't know", "")


def test_a_custom_phrase_is_matched_as_whole_words() -> None:
    assert not is_abstention("Sudan Airways", "N/A")
    assert not is_abstention("308", "3") and not is_abstention("Norway", "No")
    assert is_abstention("N/A", "N/A") and is_abstention("answer: n/a, sorry", "N/A")


def test_an_abstention_cut_short_by_max_chars_is_still_one() -> None:
    from kbqa.answers.abstention import judge

    assert judge(ABSTENTION_PHRASE, "প্রশ্ন?", ABSTENTION_PHRASE, max_chars=5) == (
        ABSTENTION_PHRASE, True,
    )  # fmt: skip
    assert judge("Dhaka is the capital", "q?", ABSTENTION_PHRASE, max_chars=5) == ("Dhaka", False)
