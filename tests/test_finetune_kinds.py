"""Question kinds made by rule for the reader's training (issue 32, part 4): causal and list
questions from sentences, lexical traps from a question and its passage, and their examples."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kbqa.context import Context
from kbqa.corpus.document import Document
from kbqa.embedders import HashEmbedder
from kbqa.evals.datasets import Question
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.data import ExampleBuilder, shown_context
from kbqa.finetune.example_set import add_rule_kinds, build_examples
from kbqa.finetune.examples import DataStats
from kbqa.finetune.kinds import (
    MAX_SENTENCE_WORDS,
    causal_pairs,
    causal_question,
    list_question,
    sentences,
)
from kbqa.finetune.questions import TrainingQuestion
from kbqa.finetune.traps import (
    DAY_MAX,
    YEAR_SHIFT,
    entity_trap,
    name_lexicon,
    number_trap,
    relation_trap,
)
from kbqa.index import build_index
from kbqa.llm.fake import ScriptedChatModel
from kbqa.prompts import ABSTENTION_PHRASE

RNG = random.Random(0)


def test_causal_pairs_read_clause_joins_not_the_noun_reason() -> None:
    text = (
        "নদীর পানি বেড়ে যায়, কারণ উজানে প্রচুর বৃষ্টি হয়েছে। "
        "আমরা তাঁর মৃত্যুর কারণ জানতে চাই। "
        "কারখানাটি তিন মাস বন্ধ ছিল। ফলে শ্রমিকেরা বেতন পাননি।"
    )
    pairs = causal_pairs(text)
    assert pairs == [
        ("নদীর পানি বেড়ে যায়", "উজানে প্রচুর বৃষ্টি হয়েছে"),
        ("শ্রমিকেরা বেতন পাননি", "কারখানাটি তিন মাস বন্ধ ছিল"),
    ]
    made = {causal_question(*pairs[0], random.Random(seed)) for seed in range(10)}
    # both of BanglaRQA's orders: why at the end, or before the compound verb
    assert made == {
        ("নদীর পানি বেড়ে যায় কেন?", "উজানে প্রচুর বৃষ্টি হয়েছে"),
        ("নদীর পানি কেন বেড়ে যায়?", "উজানে প্রচুর বৃষ্টি হয়েছে"),
    }


def test_causal_question_refuses_short_clauses_and_long_causes() -> None:
    assert causal_question("পানি বাড়ে", "বৃষ্টি হয়েছে", RNG) is None  # effect of 2 words
    assert causal_question("নদীর পানি বেড়ে যায়", "বৃষ্টি", RNG) is None  # cause of 1 word
    long_cause = " ".join(["শব্দ"] * 13)
    assert causal_question("নদীর পানি বেড়ে যায়", long_cause, RNG) is None


def test_sentences_over_the_limit_are_not_read() -> None:
    # a long comma run took minutes in the list regex (a break-it trial): such text is skipped
    assert list_question("ঢাকা, " * 2000) is None
    assert causal_pairs("কারণ, " * 2000) == []
    long = " ".join(["শব্দ"] * (MAX_SENTENCE_WORDS + 1))
    assert sentences(f"ছোট একটি বাক্য। {long}।") == ["ছোট একটি বাক্য"]


def test_list_question_asks_an_enumeration_in_place() -> None:
    made = list_question("এই অঞ্চলে ধান, পাট, গম ও আখ চাষ করা হয়।")
    assert made == ("এই অঞ্চলে কী কী চাষ করা হয়?", "ধান, পাট, গম ও আখ")


@pytest.mark.parametrize(
    "sentence",
    [
        "সংবাদ সম্মেলনে জানানো হয়, সড়ক ও জনপথ বিভাগ ভাড়া ঠিক করে",  # a clause comma
        "আবদুল ওয়াদুদ প্রথম আলোকে বলেন, নবীয়া বেগম এবং তাঁর নবজাতক সুস্থ",
        # two-word items with one between commas: "কীরকম একপেশে" is a clause, not an item
        "কীরকম একপেশে, কেন্দ্রীয় তথ্য ও সম্প্রচার মন্ত্রণালয়ের চিঠিতে তার উল্লেখ আছে",
        "তিনি ঢাকা, রাজশাহী, কক্সবাজার জেলা ও সিলেট ঘুরেছেন",  # items of unequal length
        "ঢাকা ও চট্টগ্রাম দুটি বড় শহর",  # two items, no comma
    ],
)
def test_list_question_refuses_what_is_not_a_visible_list(sentence: str) -> None:
    assert list_question(sentence) is None


def test_names_are_the_words_of_who_and_where_answers() -> None:
    names = name_lexicon(
        [
            ("person", "বিদ্যা বালান"),
            ("location", "কলকাতায়"),  # the stem is kept
            ("person", "Marie Curie"),
            ("location", "in the north of France"),  # over three words
            ("date", "১৯১৩"),
            ("person", "the Seine"),  # English lower case ("the") is no name
        ]
    )
    assert names == {
        "person": sorted(["Curie", "Marie", "Seine", "বালান", "বিদ্যা"]),
        "location": ["কলকাতা"],
    }
    # with the knowledge base's counts, a word in many chunks is a common noun, not a name
    counts = {"বিদ্যা": 40, "Marie": 4}
    rare = name_lexicon([("person", "বিদ্যা বালান"), ("person", "Marie")], lambda w: counts.get(w, 1))
    assert rare == {"person": ["বালান"], "location": []}


def test_entity_trap_swaps_a_name_for_one_of_its_type_the_passage_lacks() -> None:
    shown = "Paris is the capital of France. It lies on the Seine."
    names = {"location": ["Paris", "Seine", "Lyon"], "person": ["Curie"]}
    trap = entity_trap("Which river does Paris lie on?", ["the Seine"], shown, names, RNG)
    assert trap == "Which river does Lyon lie on?"  # a place for a place, absent from the passage
    no_other = {"location": ["Paris", "France"], "person": ["Curie"]}
    assert (
        entity_trap("Which river does Paris lie on?", ["the Seine"], shown, no_other, RNG) is None
    )
    # a name the passage does not hold is not swapped (nothing would lure the reader)
    assert entity_trap("Which river does Lyon lie on?", ["x"], shown, names, RNG) is None


def test_entity_trap_keeps_a_bangla_case_ending() -> None:
    shown = "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন।"
    names = {"location": ["কলকাতা", "রাজশাহী"], "person": ["রবীন্দ্রনাথ"]}
    trap = entity_trap("কলকাতায় কে জন্মগ্রহণ করেন?", ["রবীন্দ্রনাথ"], shown, names, RNG)
    assert trap == "রাজশাহীয় কে জন্মগ্রহণ করেন?"  # the ending য় kept
    # the answer's words are never swapped
    assert entity_trap("রবীন্দ্রনাথ কোথায় জন্মগ্রহণ করেন?", ["রবীন্দ্রনাথ"], shown,
                       {"person": ["রবীন্দ্রনাথ", "নজরুল"]}, RNG) is None  # fmt: skip


def test_relation_trap_asks_the_opposite_only_when_the_passage_is_silent_on_it() -> None:
    born = "রবীন্দ্রনাথ ঠাকুর কত সালে জন্মগ্রহণ করেন?"
    assert relation_trap(born, "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে জন্মগ্রহণ করেন।") == (
        "রবীন্দ্রনাথ ঠাকুর কত সালে মৃত্যুবরণ করেন?"
    )
    assert relation_trap(born, "তিনি ১৮৬১ সালে জন্মগ্রহণ করেন এবং ১৯৪১ সালে মারা যান।") is None
    assert relation_trap("When was Scheele born?", "Scheele was born in Stralsund.") == (
        "When did Scheele die?"
    )
    assert relation_trap("Where did the poet die?", "He was born in 1795, died in Rome.") is None
    assert relation_trap("Where did the poet die?", "The poet lived in Rome.") == (
        "Where was the poet born?"
    )
    # "Born" in a name is not the verb
    assert relation_trap("Where was Born Smith born?", "Smith.") == "Where did Born Smith die?"
    # a ZWNJ inside the word: জন্ম is not a word of জন্ম‌গ্রহণ
    assert relation_trap("তিনি কবে জন্ম\u200cগ্রহণ করেন?", "তিনি ১৯০১ সালে জন্মগ্রহণ করেন।") is None
    # a short stem is a whole word: মাস (month) does not hold মা (mother)
    assert relation_trap("তাঁর পিতার নাম কী?", "তিনি তিন মাস ঢাকায় ছিলেন।") == "তাঁর মাতার নাম কী?"
    assert relation_trap("তাঁর পিতার নাম কী?", "তাঁর মা ঢাকায় থাকতেন।") is None
    assert relation_trap("Where is the capital?", "The capital is Dhaka.") is None


BN_DIGITS = "০১২৩৪৫৬৭৮৯"


def as_int(digits: str) -> int:
    return int(digits.translate(str.maketrans(BN_DIGITS, "0123456789")))


def test_number_trap_swaps_a_number_the_passage_holds_for_one_it_lacks() -> None:
    shown = "রহিম মিয়া ১৯৭০ সালে ২৬ মার্চ গ্রামে একটি বিদ্যালয় প্রতিষ্ঠা করেন। সেতুটি ৪.৮ কিলোমিটার।"
    held = {"১৯৭০", "২৬"}  # numbers of two digits or more (৪.৮ is a decimal)
    for seed in range(20):
        rng = random.Random(seed)
        year = number_trap("১৯৭০ সালে কে বিদ্যালয় প্রতিষ্ঠা করেন?", ["রহিম মিয়া"], shown, rng)
        assert year is not None and year.endswith(" সালে কে বিদ্যালয় প্রতিষ্ঠা করেন?")
        new_year = year.split()[0]
        assert new_year not in held and set(new_year) <= set(BN_DIGITS)  # Bangla digits kept
        assert 0 < abs(as_int(new_year) - 1970) <= YEAR_SHIFT
        day = number_trap("২৬ মার্চ কী প্রতিষ্ঠা হয়?", ["বিদ্যালয়"], shown, rng)
        assert day is not None and day.split()[0] not in held
        assert 1 <= as_int(day.split()[0]) <= DAY_MAX  # a day stays a day
    english = number_trap("Who won the 1998 final?", ["France"], "France won the 1998 final.", RNG)
    assert english is not None and english != "Who won the 1998 final?"
    assert english.split()[3].isascii() and english.split()[3].isdigit()
    # a number the passage does not hold, one in the answer, or a decimal's digits: no trap
    assert number_trap("১৯৮০ সালে কে বিদ্যালয় প্রতিষ্ঠা করেন?", ["x"], shown, RNG) is None
    assert number_trap("১৯৭০ সালের কোন মাসে?", ["১৯৭০ সালের মার্চ"], shown, RNG) is None
    assert number_trap("৪.৮ কিলোমিটার লম্বা কী?", ["সেতু"], shown, RNG) is None
    # other scripts' digits, leading zeros and runs too long for a number are left alone
    assert number_trap("x ٣٤ y", [], "٣٤", RNG) is None
    assert number_trap("agent 007 who", [], "007", RNG) is None
    assert number_trap("x 12 y", [], "9" * 5000 + " 12", RNG) is not None  # no int() overflow
    # a replacement is none of the passage's numbers, one-digit ones included
    crowded = "১২ তারিখে " + " ".join("০১২৩৪৫৬৭৮৯"[d] for d in range(1, 10))
    for seed in range(20):
        day = number_trap("১২ তারিখে কী হয়েছিল", [], crowded, random.Random(seed))
        assert day is not None and as_int(day.split()[0]) >= 10
    assert as_int(number_trap("২০৯৯ সালে কী?", [], "২০৯৯", RNG).split()[0]) < 2100


def test_trap_rules_are_checked_and_recorded_only_when_not_the_default() -> None:
    plain = ReaderConfig(train="t", kb="k")
    assert plain.traps == ["relation", "entity"] and "trap_rules" not in plain.data_settings()
    cfg = ReaderConfig(train="t", kb="k", trap_rules="number, relation,entity")
    assert cfg.traps == ["relation", "entity", "number"]  # tried in TRAP_RULES' order
    assert cfg.data_settings()["trap_rules"] == "relation,entity,number"
    with pytest.raises(ValueError, match=r"trap_rules 'relation,year' \(unknown: year\)"):
        ReaderConfig(train="t", kb="k", trap_rules="relation,year")
    with pytest.raises(ValueError, match="trap_rules ' , ': name one or more of"):
        ReaderConfig(train="t", kb="k", trap_rules=" , ")


DOC = Document(
    "k1",
    "বন্যা",
    "নদীর পানি বেড়ে যায়, কারণ উজানে প্রচুর বৃষ্টি হয়েছে। "
    "এই অঞ্চলে ধান, পাট, গম ও আখ চাষ করা হয়। "
    "রহিম মিয়া ১৯৭০ সালে গ্রামে একটি বিদ্যালয় প্রতিষ্ঠা করেন।",
)
OTHER = Document("k2", "শহর", "ঢাকা বাংলাদেশের রাজধানী। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।")
THIRD = Document("k3", "হাসপাতাল", "করিম শেখ ঢাকায় একটি হাসপাতাল তৈরি করেন।")


@pytest.fixture(scope="module")
def kinds_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kinds") / "idx"
    build_index([DOC, OTHER, THIRD], out, HashEmbedder(), progress=False)
    return out


def test_rule_kinds_are_added_after_the_same_other_examples(kinds_index: Path) -> None:
    ctx = Context(index_dir=str(kinds_index), embedder="fake/hash", web_search="off", k=1)
    model = ScriptedChatModel(model_name="fake/s", mode="script", script=["x"])
    questions = [
        TrainingQuestion(Question("q1", "রহিম মিয়া কত সালে বিদ্যালয় প্রতিষ্ঠা করেন?", ["১৯৭০"], "k1")),
        TrainingQuestion(Question("q2", "ঢাকা কোন নদীর তীরে অবস্থিত?", ["বুড়িগঙ্গা"], "k2")),
        # who-questions: their answers are the names entity traps swap
        TrainingQuestion(Question("q3", "বিদ্যালয়টি কে প্রতিষ্ঠা করেন?", ["রহিম মিয়া"], "k1")),
        TrainingQuestion(Question("q4", "হাসপাতালটি কে তৈরি করেন?", ["করিম শেখ"], "k3")),
    ]
    splits = {"k1": "train", "k2": "val", "k3": "train"}

    def build() -> tuple[list, DataStats]:
        builder = ExampleBuilder(ctx, model, seed=0)
        return build_examples(
            questions, builder, splits=splits, negative_ratio=0.5, yes_no_ratio=0.0, seed=0,
            progress=False,
        ), builder  # fmt: skip

    (plain, stats), builder = build()
    count_before = dict(stats.by_kind["train"])
    made = add_rule_kinds(
        list(plain),
        stats,
        questions,
        (builder, None),
        splits=splits,
        kinds=["why", "list"],
        trap_ratio=1.0,
        served_share=1.0,
        seed=0,
    )
    assert made[: len(plain)] == plain  # the examples without the rule kinds are unchanged
    extra = {ex.qid: ex for ex in made[len(plain) :]}
    why = next(ex for qid, ex in extra.items() if "#why-" in qid)
    assert why.kind == "span" and why.target == "উজানে প্রচুর বৃষ্টি হয়েছে"
    assert why.target in shown_context(why.prompt) and "কেন" in why.question
    listed = next(ex for qid, ex in extra.items() if "#list-" in qid)
    assert listed.target == "ধান, পাট, গম ও আখ" and "কী কী" in listed.question
    traps = [ex for qid, ex in extra.items() if qid.endswith("#trap")]
    assert traps and all(t.kind == "abstain" and t.target == ABSTENTION_PHRASE for t in traps)
    trap = next(t for t in traps if t.qid == "q1#trap")
    assert trap.question != questions[0].question.question
    assert "১৯৭০" in shown_context(trap.prompt)  # the lure is still read
    assert stats.made["why"] == 1 and stats.made["list"] == 1 and stats.made["trap"] == len(traps)
    assert stats.by_kind["train"]["span"] == count_before["span"] + 2


def test_config_names_an_unknown_rule_kind_and_keeps_old_settings_unchanged() -> None:
    with pytest.raises(ValueError, match=r"rule_kinds: unknown kind.*how"):
        ReaderConfig(train="t", kb="k", rule_kinds="why,how")
    with pytest.raises(ValueError, match="names no kind"):
        ReaderConfig(train="t", kb="k", rule_kinds=" , ")
    with pytest.raises(ValueError, match="trap_ratio"):
        ReaderConfig(train="t", kb="k", trap_ratio=1.5)
    plain = ReaderConfig(train="t", kb="k").data_settings()
    assert "rule_kinds" not in plain and "trap_ratio" not in plain
    made = ReaderConfig(train="t", kb="k", rule_kinds=" list, why", trap_ratio=0.1)
    assert made.data_settings() == {**plain, "rule_kinds": "list,why", "trap_ratio": 0.1}


def test_number_traps_are_made_only_when_their_rule_is_named(kinds_index: Path) -> None:
    ctx = Context(index_dir=str(kinds_index), embedder="fake/hash", web_search="off", k=1)
    model = ScriptedChatModel(model_name="fake/s", mode="script", script=["x"])
    asked = "১৯৭০ সালে গ্রামে কে বিদ্যালয় প্রতিষ্ঠা করেন?"
    questions = [TrainingQuestion(Question("q5", asked, ["রহিম মিয়া"], "k1"))]

    def traps(rules: tuple[str, ...]) -> list:
        stats = DataStats()
        made = add_rule_kinds(
            [], stats, questions, (ExampleBuilder(ctx, model, seed=0), None),
            splits={"k1": "train"}, kinds=[], trap_ratio=1.0, served_share=1.0, seed=0,
            trap_rules=rules,
        )  # fmt: skip
        return [ex for ex in made if ex.qid == "q5#trap"]

    assert traps(("relation", "entity")) == []  # neither a relation nor a name to swap
    (trap,) = traps(("relation", "entity", "number"))
    assert (
        trap.kind == "abstain"
        and trap.question != asked
        and trap.question.endswith(" সালে গ্রামে কে বিদ্যালয় প্রতিষ্ঠা করেন?")
    )
    assert "১৯৭০" in shown_context(trap.prompt)  # the lure is still read
