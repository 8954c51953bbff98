"""The no-LLM extractor, web query entities and answer post-processing (table-driven)."""

from __future__ import annotations

import pytest

from kbqa.answers.aligned import aligned_span, same_stem
from kbqa.answers.cleanup import drop_year_word, postprocess
from kbqa.answers.extract import PATTERNS, extract_answer, sentences
from kbqa.answers.snap import snap_to_context
from kbqa.answers.web_query import key_entities, web_query

BN = "তিনি ১৯৭১ সালের ২৬ মার্চ জন্মগ্রহণ করেন, ইমেইল: info@example.com.bd"
EN = (
    "The office is in 387 Soda Hall. Call +1 (510) 642-1042 or see https://eecs.berkeley.edu/"
    "contact. Prof. Dan Klein teaches CS 288. Advanced NLP is course 11-711. The river is "
    "120 km long. Applications close on March 15, 2026."
)
PASSAGES = [(0, BN), (1, EN), (2, "পদ্মা নদীর দৈর্ঘ্য ১২০ কিলোমিটার। নদীটি ১৯৫০ সালে জরিপ করা হয়।")]


@pytest.mark.parametrize(
    ("question", "qtype", "answer", "method"),
    [
        ("তিনি কবে জন্মগ্রহণ করেন?", "date", "১৯৭১ সালের ২৬ মার্চ", "date"),
        ("তিনি কোন সালে জন্মগ্রহণ করেন?", "date", "১৯৭১", "year"),  # the year, not "in 1971"
        ("তাঁর ইমেইল কী?", "email", "info@example.com.bd", "email"),
        ("What is the phone number of the office?", "other", "+1 (510) 642-1042", "phone"),
        ("What is the website of the office?", "other", "https://eecs.berkeley.edu/contact", "url"),
        ("Who teaches CS 288?", "person", "Prof. Dan Klein", "person"),
        ("What is the course number of Advanced NLP?", "other", "11-711", "course"),
        ("পদ্মা নদীর দৈর্ঘ্য কত?", "number", "১২০ কিলোমিটার", "number"),
        ("When do applications close?", "date", "March 15, 2026", "date"),
        ("Is the office in Soda Hall?", "yes/no", "Yes", "yes/no"),
    ],
)
def test_typed_extraction(question: str, qtype: str, answer: str, method: str) -> None:
    found = extract_answer(question, qtype, PASSAGES, "bn" if qtype == "date" else "en")
    assert found is not None and (found.answer, found.method) == (answer, method)


def test_untyped_questions_take_the_novel_words_of_the_best_sentence() -> None:
    found = extract_answer("Where is the office?", "location", PASSAGES, "en")
    assert found is not None and found.method == "overlap" and "387 Soda Hall" in found.answer


def test_no_shared_word_means_no_answer() -> None:
    assert extract_answer("Who won the 1966 World Cup?", "person", PASSAGES[2:], "en") is None


def test_bangla_words_stay_whole() -> None:
    # Python's re \\w does not match vowel signs: জন্মগ্রহণ would split there
    assert PATTERNS["date"].findall(BN) == ["১৯৭১ সালের ২৬ মার্চ"]
    assert PATTERNS["year"].findall(BN) == ["১৯৭১"]
    assert sentences("Prof. Dan Klein teaches. ড. ইউনূস এসেছেন। আর কেউ না।") == [
        "Prof. Dan Klein teaches.",
        "ড. ইউনূস এসেছেন।",
        "আর কেউ না।",
    ]


@pytest.mark.parametrize(
    ("question", "entities"),
    [
        ("Who won the Nobel Prize in Physics in 1903?", ["Nobel Prize in Physics", "won", "1903"]),
        ('What does "Context-free grammar" mean?', ["Context-free grammar", "mean"]),
        ("রবীন্দ্রনাথ ঠাকুরের জন্ম কোথায়?", ["রবীন্দ্রনাথ", "ঠাকুর", "জন্ম"]),
    ],
)
def test_key_entities(question: str, entities: list[str]) -> None:
    assert key_entities(question) == entities
    assert len(web_query(question).split()) <= 8


@pytest.mark.parametrize(
    ("answer", "qtype", "titles", "expected"),
    [
        ("Jacksonville,_Florida: 1822", "date", ["Jacksonville, Florida"], "1822"),
        ("হ্যাঁ, তিনি ছিলেন", "yes/no", [], "হ্যাঁ"),
        ("no, it was not", "yes/no", [], "No"),
        ("in 1903 because she won", "date", [], "1903"),
        ("Paris (the capital)", "location", [], "Paris"),
        ("ঢাকা কারণ এটি রাজধানী", "location", [], "ঢাকা"),
        ("Marie Curie", "person", [], "Marie Curie"),
    ],
)
def test_postprocess(answer: str, qtype: str, titles: list[str], expected: str) -> None:
    assert postprocess(answer, qtype, titles) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("১৯৭১ সালে", "১৯৭১"),
        ("1971 সালে", "1971"),
        ("২০১৪ সাল", "২০১৪"),
        ("৫৩২ খ্রিষ্টাব্দের", "৫৩২"),
        ("১৯২১–১৯৯২ সালে", "১৯২১–১৯৯২"),
        ("২০২০-২১ সালের", "২০২০-২১"),
        ("১৯৭১ সালে।", "১৯৭১"),  # a danda, a full stop, a no-break space do not hide the word
        ("১৯৭১ সালে.", "১৯৭১"),
        ("১৯৭১ সালে৷", "১৯৭১"),  # U+09F7, typed for a danda
        ("১৯৭১ সালে॥", "১৯৭১"),
        ("২০২০—২১ সালে", "২০২০—২১"),
        ("১৯৭১ সালে\u00a0", "১৯৭১"),
        ("১৯৭১ সা\u200cলে", "১৯৭১"),  # nor does a ZWNJ typed inside it
        ("\u200b১৯৭১ সালে", "১৯৭১"),
        ("১৮১৭ সালের ১২ জুন", "১৮১৭ সালের ১২ জুন"),  # a whole date stays
        ("১৯৯৬ সাল থেকে", "১৯৯৬ সাল থেকে"),  # "since 1996": not a bare year
        ("১৯৭১ ও ১৯৭২ সালে", "১৯৭১ ও ১৯৭২ সালে"),
        ("সালে", "সালে"),
        ("৫ সাল", "৫ সাল"),  # not a year
        ("৫০০০০০ সালে", "৫০০০০০ সালে"),
        ("१९७१ সালে", "१९७१ সালে"),  # other scripts' digits: not read as a year
        ("১৯৭১", "১৯৭১"),
        ("", ""),
    ],
)
def test_drop_year_word(answer: str, expected: str) -> None:
    assert drop_year_word(answer) == expected


@pytest.mark.parametrize(
    ("answer", "language", "expected"),
    [("yes", "bn", "হ্যাঁ"), ("No", "bn", "না"), ("হ্যা", "en", "Yes"), ("yes", "en", "Yes"),
     ("yes sir", "bn", "yes sir"), ("না", None, "না")],
)  # fmt: skip
def test_bare_yes_no_in_the_question_language(answer: str, language: str, expected: str) -> None:
    assert postprocess(answer, "other", [], language) == expected


@pytest.mark.parametrize(
    ("answer", "qtype", "passage", "expected"),
    [
        ("cs161", "other", "Units: 4\nCS 161. Computer Security", "CS 161"),
        ("11-711", "number", "Course 11 711: Advanced NLP", "11 711"),
        ("35", "number", "Chapters 3-5 cover it", "35"),  # never split a digit run
        ("PhD", "other", "She holds a Ph.D. in Linguistics.", "Ph.D"),
        ("March 26 1971", "date", "born on March 26, 1971 in Dhaka", "March 26, 1971"),
        ("1971", "date", BN, "১৯৭১"),
        ("২৬ মার্চ", "date", "on 26 মার্চ 1971", "26 মার্চ"),
        ("1971", "date", "in 1971 and 1972", "1971"),  # verbatim: unchanged
        ("45", "number", "In 1945, 45 people came.", "45"),  # whole numbers only
        ("1999", "date", "in 1971", "1999"),  # not in the context: unchanged
        ("dhaka", "location", "Dhaka is the capital", "dhaka"),  # no digit, not a date/degree
        ("2", "number", "in 2 days", "2"),
    ],
)
def test_snap_to_context(answer: str, qtype: str, passage: str, expected: str) -> None:
    assert snap_to_context(answer, qtype, [passage]) == expected


def test_an_extraction_carries_its_sentence_for_the_cross_check() -> None:
    from kbqa.answers.cross_check import agrees

    found = extract_answer("পদ্মা নদীর দৈর্ঘ্য কত?", "number", PASSAGES)
    assert found is not None and found.sentence == "পদ্মা নদীর দৈর্ঘ্য ১২০ কিলোমিটার।"
    assert agrees("120", found)  # digits folded: shares a word with the span
    assert agrees("পদ্মা নদীর", found)  # no shared word with the span, but in its sentence
    assert not agrees("১৯৫০", found)  # read from another sentence
    assert not agrees("", found)


@pytest.mark.parametrize(
    ("question", "sentence", "span"),
    [
        # both anchors: what lies between the words around the question word
        ("অনুষ্ঠানটি কোন ভাষায় প্রচারিত হয়?", "অনুষ্ঠানটি বাংলা ভাষায় প্রচারিত হয়।", "বাংলা"),
        ("রাজু কোন শহরে বাস করে?", "রাজু এখন ঢাকা শহরে বাস করে।", "এখন ঢাকা"),
        # a case ending differs between question and sentence (সুমনের / সুমন)
        ("সুমনের বাড়ি কোন গ্রামে?", "সুমন রসুলপুর গ্রামে থাকে।", "রসুলপুর"),
        # left anchor only: the first run after it
        (
            "পদ্মা নদীর উৎস কোথায়?",
            "পদ্মা নদীর উৎস হিমালয়ের গঙ্গোত্রী হিমবাহ, যা ভারতে অবস্থিত।",
            "হিমালয়ের গঙ্গোত্রী হিমবাহ, যা ভারতে অবস্থিত",
        ),
        # right anchor only: the run before it
        ("কে গীতাঞ্জলি লিখেছেন?", "রবীন্দ্রনাথ ঠাকুর গীতাঞ্জলি লিখেছেন।", "রবীন্দ্রনাথ ঠাকুর"),
        # why / how are answered by a clause; a doubled question word asks for a list
        ("নদীটি কেন শুকিয়ে যায়?", "বাঁধের কারণে নদীটি শুকিয়ে যায়।", None),
        ("নদীটির তীরে কি কি শহর আছে?", "নদীটির তীরে ঢাকা ও নারায়ণগঞ্জ শহর আছে।", None),
        # no question word, or no anchor in the sentence
        ("পদ্মা একটি নদী?", "পদ্মা একটি বড় নদী।", None),
        ("রাজু কোন শহরে বাস করে?", "মিনা গ্রামে থাকে।", None),
    ],
)
def test_aligned_span(question: str, sentence: str, span: str | None) -> None:
    assert aligned_span(sentence, question) == span


def test_aligned_span_refuses_a_gap_longer_than_max_words() -> None:
    question = "রাজু কোন শহরে বাস করে?"
    sentence = "রাজু এক দুই তিন চার পাঁচ শহরে বাস করে।"
    assert aligned_span(sentence, question, max_words=4) is None
    assert aligned_span(sentence, question, max_words=5) == "এক দুই তিন চার পাঁচ"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("ভাষায়", "ভাষার", True),
        ("সুমনের", "সুমন", True),
        ("কর", "করে", False),
        ("রাম", "রাজা", False),
        ("1971", "1975", False),  # digits match only when equal
        ("100", "1000", False),
    ],
)
def test_same_stem(a: str, b: str, same: bool) -> None:
    assert same_stem(a, b) is same


def test_bangla_untyped_questions_take_the_aligned_span_english_the_novel_words() -> None:
    passages = [(0, "অনুষ্ঠানটি বাংলা ভাষায় প্রচারিত হয়। এটি ১৯৯০ সালে শুরু হয়।")]
    found = extract_answer("অনুষ্ঠানটি কোন ভাষায় প্রচারিত হয়?", "other", passages, "bn")
    assert found is not None and (found.answer, found.method) == ("বাংলা", "aligned")
    found = extract_answer("Where is the office?", "location", PASSAGES, "en")
    assert found is not None and found.method == "overlap"


def test_bangla_typed_patterns_stay_in_the_best_sentence() -> None:
    # the best sentence (most words shared with the question) holds no year; the next one does
    passages = [(0, "রাজু ঢাকা শহরে জন্মগ্রহণ করেন। তাঁর ভাই ১৯৮০ সালে চট্টগ্রাম যান।")]
    found = extract_answer("রাজু কোন সালে ঢাকা শহরে জন্মগ্রহণ করেন?", "date", passages, "bn")
    assert found is not None and "১৯৮০" not in found.answer
    # English still searches further sentences for a typed pattern
    passages = [(0, "The river Alpha is long. It was surveyed in 1950 by the state.")]
    found = extract_answer("In what year was the river Alpha surveyed?", "date", passages, "en")
    assert found is not None and found.answer == "1950"


def test_many_passages_and_no_content_word() -> None:
    passages = [(i, "মাঙ্গা জাপানি ভাষায় নির্মিত।") for i in range(120)]
    assert extract_answer("কোন?", "other", passages, "bn") is None  # only a question word
    assert extract_answer("ক্সজ্ঞফ কোথায়?", "other", passages, "bn") is None  # no shared word
    found = extract_answer("মাঙ্গা কোন ভাষায় নির্মিত?", "other", passages, "bn")
    assert found is not None and found.answer == "জাপানি" and found.chunk_id == 0


@pytest.mark.parametrize(
    ("question", "sentence"),
    [
        ("সে কোন কথা বলেছিল?", "সে কোন কথা বলেনি বলেছিল।"),  # the question word itself
        ("মাঙ্গা কোন ভাষায় নির্মিত?", "মাঙ্গা — ভাষায় নির্মিত।"),  # punctuation only
    ],
)
def test_aligned_span_is_never_a_question_word_or_punctuation(question: str, sentence: str) -> None:
    assert aligned_span(sentence, question) is None
