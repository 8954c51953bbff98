"""The ``synonym`` paraphrase rule: the dictionary's synonyms kept by the filters of
:mod:`kbqa.finetune.synonyms`, and one word of a training question replaced."""

from __future__ import annotations

import json
import random
import sqlite3
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from kbqa.answers.language import question_type
from kbqa.errors import KBQAError
from kbqa.finetune import synonyms as syn
from kbqa.finetune.paraphrase import paraphrase

ENTRIES = [  # (word, part of speech, first meaning)
    ("প্রেসিডেন্ট", "বিশেষ্য", "রাষ্ট্রপতি; সভাপতি।"),  # kept: both synonyms common enough
    ("জাহাজ", "বিশেষ্য", "অর্ণবপোত, নৌকা।"),  # অর্ণবপোত is rare in the KB: only নৌকা kept
    ("হয়", "বিশেষ্য", "অশ্ব, ঘোড়া।"),  # a common word of the KB: its homonym is never used
    ("সদস্য", "বিশেষ্য", "member, সভ্য।"),  # Latin script out; সভ্য is rare
    ("জেতা", None, "জয়লাভ করা।"),  # a verb (no part of speech): left out
    ("চার", "বিশেষ্য", "গোয়েন্দা।"),  # short and a homonym
    ("লম্বা", "বিশেষণ", "দীর্ঘ; বিস্তৃত (লম্বা ঘুম)।"),  # a parenthesised example is no synonym
    ("পাঁচজন", "বিশেষ্য", "লোকজন।"),  # a number word: never replaced
]


def _dictionary(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE words (word TEXT, part_of_speech TEXT, meanings TEXT)")
        conn.executemany(
            "INSERT INTO words VALUES (?, ?, ?)",
            [
                (w, pos, json.dumps([m, "another sense"], ensure_ascii=False))
                for w, pos, m in ENTRIES
            ],
        )
    return path


def _counts() -> Counter[str]:
    common = {"হয়": 5000, **{f"শব্দ{i}": 1000 for i in range(syn.COMMON_WORDS)}}
    known = {w: syn.MIN_COUNT for w in ("রাষ্ট্রপতি", "সভাপতি", "নৌকা", "ঘোড়া", "দীর্ঘ", "লোকজন")}
    return Counter({**common, **known, "অর্ণবপোত": 2, "সভ্য": 1, "বিস্তৃত": syn.MIN_COUNT})


def test_the_filters_keep_common_synonyms_of_nouns_and_adjectives(tmp_path: Path) -> None:
    table = syn.synonym_table(_counts(), _dictionary(tmp_path / "d.db"))
    assert table == {
        "প্রেসিডেন্ট": ["রাষ্ট্রপতি", "সভাপতি"],
        "জাহাজ": ["নৌকা"],
        "লম্বা": ["দীর্ঘ"],  # "বিস্তৃত (লম্বা ঘুম)" is not a bare word
    }


def test_a_word_of_a_name_is_never_replaced(tmp_path: Path) -> None:
    """``সালাম`` of *Abdus Salam* became ``শান্তি`` in a trial run: names of the training
    answers are left out of the table."""
    table = syn.synonym_table(_counts(), _dictionary(tmp_path / "d.db"), names=["প্রেসিডেন্ট"])
    assert "প্রেসিডেন্ট" not in table and "জাহাজ" in table


def test_one_word_is_replaced_and_the_question_keeps_its_type(tmp_path: Path) -> None:
    table = syn.synonym_table(_counts(), _dictionary(tmp_path / "d.db"))
    question = "কোন দেশের প্রেসিডেন্ট জাহাজে চড়েন?"
    asked, used = paraphrase(question, random.Random(0), ("synonym",), table)
    assert used == ["synonym"]
    assert asked in {"কোন দেশের রাষ্ট্রপতি জাহাজে চড়েন?", "কোন দেশের সভাপতি জাহাজে চড়েন?"}
    assert question_type(asked) == question_type(question)
    # whole words only (জাহাজে is not the headword জাহাজ), and no table: the rule never applies
    assert paraphrase("জাহাজে কে চড়েন?", random.Random(0), ("synonym",), table)[1] == []
    assert paraphrase(question, random.Random(0), ("synonym",))[1] == []


def test_a_missing_dictionary_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(name: str) -> None:
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(syn.resources, "files", missing)
    with pytest.raises(KBQAError, match="pip install shobdo"):
        syn.dictionary_path()
    not_a_db = tmp_path / "x.db"
    not_a_db.write_text("not sqlite")
    with pytest.raises(KBQAError, match="not a dictionary of the shobdo package"):
        syn.synonym_table(_counts(), not_a_db)


def test_the_shipped_dictionary_gives_the_synonyms_people_use() -> None:
    """The real ``shobdo`` dictionary (the finetune extra), with counts standing in for a KB."""
    pytest.importorskip("shobdo")
    counts = Counter({w: syn.MIN_COUNT for w in ("রাষ্ট্রপতি", "শিক্ষার্থী", "নারী", "লাভ")})
    table = syn.synonym_table(counts)
    assert "রাষ্ট্রপতি" in table["প্রেসিডেন্ট"] and "নারী" in table["মহিলা"]
    assert all(s in counts for synonyms in table.values() for s in synonyms)


def test_training_questions_are_asked_with_a_synonym_of_the_kbs_words(
    tiny_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``build_examples`` makes the table from its knowledge base's words and hands it to the
    rule (the dictionary stubbed: the tiny KB has too few words for the real filters)."""
    from test_finetune_data import QUESTIONS, _ctx

    from kbqa.finetune import example_set
    from kbqa.finetune.data import ExampleBuilder
    from kbqa.llm.fake import ScriptedChatModel

    seen: list[Counter[str]] = []

    def table(counts: Counter[str], names: Iterable[str] = ()) -> dict[str, list[str]]:
        seen.append(counts)
        list(names)  # the training answers' names, drawn
        return {"পুরস্কার": ["সম্মাননা"]}

    monkeypatch.setattr(example_set, "synonym_table", table)
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=0)
    examples, stats = example_set.build_examples(
        QUESTIONS[:2], builder, splits={"d1": "train", "d2": "train"}, negative_ratio=0,
        yes_no_ratio=0, seed=0, paraphrase_share=1.0, paraphrase_rules=("synonym",),
        progress=False,
    )  # fmt: skip
    assert seen and seen[0]["নোবেল"] >= 1  # the KB's own words were counted
    by_qid = {e.qid: e for e in examples}
    assert by_qid["q2"].question == "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল সম্মাননা পান?"
    assert by_qid["q1"].question == QUESTIONS[0].question.question  # no headword in it
    assert stats.paraphrased == 1 and by_qid["q2"].target == "১৯১৩"


def test_break_it_findings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A break-it trial of 2026-12-06: a headword with no synonyms crashed the rule; a path with
    ``#`` opened another file (and made one); a row without a word crashed the table; a
    synonym holding a number word changed the question's number."""
    rng = random.Random(0)
    assert paraphrase("বিদ্যালয় কোথায়?", rng, ("synonym",), {"বিদ্যালয়": []})[1] == []
    assert paraphrase("বিদ্যালয় কোথায়?", rng, ("synonym",), {"বিদ্যালয়": "স্কুল"})[1] == []  # type: ignore[dict-item]

    odd = tmp_path / "a#b?c%20"
    odd.mkdir()
    before = set(Path.cwd().iterdir())
    table = syn.synonym_table(_counts(), _dictionary(odd / "d.db"))
    assert "প্রেসিডেন্ট" in table and set(Path.cwd().iterdir()) == before

    rows = [(None, "রাষ্ট্রপতি"), (7, "রাষ্ট্রপতি"), ("মিনিটকাল", "এক ঘণ্টা")]
    with sqlite3.connect(odd / "d.db") as conn:
        conn.executemany(
            "INSERT INTO words VALUES (?, 'বিশেষ্য', ?)",
            [(w, json.dumps([m], ensure_ascii=False)) for w, m in rows],
        )
    counts = _counts() | Counter({"এক": 100, "ঘণ্টা": 100})
    assert "মিনিটকাল" not in syn.synonym_table(counts, odd / "d.db")  # a number word in it

    with pytest.raises(KBQAError, match="no such file"):
        syn.synonym_table(_counts(), tmp_path / "missing.db")


def test_a_rule_that_can_do_nothing_says_so(
    tiny_index: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A knowledge base without common Bangla words leaves the table empty: a warning, not a
    run whose questions were silently never rewritten (a break-it finding)."""
    from test_finetune_data import QUESTIONS, _ctx

    from kbqa.finetune import example_set
    from kbqa.finetune.data import ExampleBuilder
    from kbqa.llm.fake import ScriptedChatModel

    monkeypatch.setattr(example_set, "synonym_table", lambda counts, names=(): {})
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=0)
    with caplog.at_level("WARNING", logger="kbqa"):
        example_set.build_examples(
            QUESTIONS[:2], builder, splits={"d1": "train", "d2": "train"}, negative_ratio=0,
            yes_no_ratio=0, seed=0, paraphrase_share=1.0, paraphrase_rules=("synonym",),
            progress=False,
        )  # fmt: skip
    assert "no synonym for this knowledge base" in caplog.text


def test_second_break_it_findings() -> None:
    """A set of synonyms was ignored and an int crashed the rule; one string given as the
    rules or as the texts was read letter by letter."""
    rng = random.Random(0)
    table = {"বিদ্যালয়": {"স্কুল"}, "রাজধানী": ["কেন্দ্র", 7]}
    assert paraphrase("বিদ্যালয় কোথায়?", rng, ("synonym",), table)[0] == "স্কুল কোথায়?"  # type: ignore[arg-type]
    assert paraphrase("রাজধানী কোথায়?", rng, ("synonym",), table)[0] == "কেন্দ্র কোথায়?"  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tuple of rule names"):
        paraphrase("রাজধানী কোথায়?", rng, "ki")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not one string"):
        syn.word_counts("আমি ভাত খাই")
    with pytest.raises(TypeError, match="NoneType"):
        syn.word_counts([None])  # type: ignore[list-item]
    assert syn.word_counts(["আমি ভাত খাই, আমি"]) == Counter({"আমি": 2, "ভাত": 1, "খাই": 1})


def test_third_break_it_findings() -> None:
    """A whitespace synonym put a line break in the question and reported success; a list given
    as the table failed with an AttributeError."""
    rng = random.Random(0)
    blank = {"রাজধানী": [" ", "\n"]}
    assert paraphrase("বাংলাদেশের রাজধানী কী?", rng, ("synonym",), blank) == (
        "বাংলাদেশের রাজধানী কী?",
        [],
    )
    spaced = {"রাজধানী": ["  প্রধান\tশহর "]}
    assert paraphrase("বাংলাদেশের রাজধানী কী?", rng, ("synonym",), spaced)[0] == (
        "বাংলাদেশের প্রধান শহর কী?"
    )
    with pytest.raises(TypeError, match="synonyms must map"):
        paraphrase("রাজধানী কোথায়?", rng, ("synonym",), ["রাজধানী"])  # type: ignore[arg-type]
