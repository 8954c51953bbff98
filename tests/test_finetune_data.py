"""Reader fine-tuning data: the builder renders what serving renders, negatives abstain, yes/no
examples come from the evidence; the config names bad values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kbqa.answers.reading import generate_answer
from kbqa.context import Context
from kbqa.evals.datasets import Question
from kbqa.evals.metrics import answer_in_context
from kbqa.finetune.config import ReaderConfig, parse_duration
from kbqa.finetune.data import ExampleBuilder
from kbqa.finetune.example_set import build_examples
from kbqa.finetune.examples import read_examples, write_examples
from kbqa.finetune.questions import TrainingQuestion, split_by_document
from kbqa.llm.fake import ScriptedChatModel
from kbqa.passages import chunk_passages, retrieve_records
from kbqa.prompts import ABSTENTION_PHRASE, prompt_text
from kbqa.resources import retriever_for


class RecordingModel(ScriptedChatModel):
    """A fake reader with the ``tuned`` prompt style that remembers the prompts it was sent."""

    prompt_style: str = "tuned"
    prompts: list[str] = []  # noqa: RUF012 (pydantic copies field defaults per instance)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any) -> Any:
        self.prompts.append(prompt_text(messages))
        return super()._generate(messages, stop, run_manager, **kw)


def _ctx(index: Path) -> Context:
    return Context(index_dir=str(index), embedder="fake/hash", web_search="off")


QUESTIONS = [
    TrainingQuestion(
        Question("q1", "ঢাকা কোন নদীর তীরে অবস্থিত?", ["বুড়িগঙ্গা"], "d1"),
        "এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।",
    ),
    TrainingQuestion(
        Question("q2", "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", ["১৯১৩"], "d2"),
        "তিনি ১৯১৩ সালে নোবেল পুরস্কার পান।",
    ),
    TrainingQuestion(
        Question("q3", "Which river does Paris lie on?", ["the Seine"], "d3"),
        "It lies on the Seine.",
    ),
]


def test_training_prompt_equals_the_serving_prompt(tiny_index: Path) -> None:
    ctx = _ctx(tiny_index)
    model = RecordingModel(model_name="fake/rec", mode="script", script=["x"])
    builder = ExampleBuilder(ctx, model, seed=0)
    for tq in QUESTIONS:
        example = builder.positive(tq.question, "train")
        assert example is not None
        records = retrieve_records(tq.question.question, ctx.k, ctx)
        passages = chunk_passages(retriever_for(ctx).index.chunks, records)
        model.prompts.clear()
        generate_answer(
            model,
            ctx,
            tq.question.question,
            passages,
            question_type=example.question_type,
            language=example.language,
        )
        assert model.prompts == [example.prompt]
        assert example.prompt.endswith(f"Question: {tq.question.question}\nAnswer:")
        assert example.target == tq.question.answers[0]


def test_negatives_carry_the_abstention_target_and_lack_the_answer(tiny_index: Path) -> None:
    ctx = _ctx(tiny_index)
    builder = ExampleBuilder(ctx, ScriptedChatModel.from_name("fake/abstain"), seed=0)
    for tq in QUESTIONS:
        neg = builder.negative(tq.question, "train")
        assert neg is not None
        assert neg.kind == "abstain" and neg.target == ABSTENTION_PHRASE and neg.answers == []
        assert not answer_in_context(
            tq.question.answers, builder.context_text(neg.context_chunk_ids)
        )
        assert neg.context_chunk_ids  # distractors are shown


def test_redacted_negatives_keep_the_topic_but_not_the_answer(tiny_index: Path) -> None:
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=0)
    cut = builder.redacted(QUESTIONS[1].question, "train")
    assert cut is not None and cut.kind == "abstain" and cut.target == ABSTENTION_PHRASE
    assert "১৯১৩" not in cut.prompt.split("Question:")[-2]  # the context part
    assert "কলকাতায় জন্মগ্রহণ করেন" in cut.prompt  # the rest of the passage stays


def test_yes_no_examples_from_the_evidence(tiny_index: Path) -> None:
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=1)
    yes = builder.yes_no(QUESTIONS[1], "train", True, "১৯৭১")
    no = builder.yes_no(QUESTIONS[1], "train", False, "১৯৭১")
    assert yes is not None and no is not None
    assert (yes.kind, yes.target, no.kind, no.target) == ("yes", "হ্যাঁ", "no", "না")
    assert "১৯১৩" in yes.question and "১৯৭১" in no.question and "১৯১৩" not in no.question
    assert yes.question.endswith("?") and "কি" in yes.question.split()[-1] + yes.question
    assert yes.question_type == "yes/no"


def test_build_split_and_round_trip(tiny_index: Path, tmp_path: Path) -> None:
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=0)
    splits = split_by_document(QUESTIONS, 0.34, seed=0)
    assert sorted(splits.values()) == ["train", "train", "val"]
    assert split_by_document(QUESTIONS, 0.34, seed=0) == splits
    examples, stats = build_examples(
        QUESTIONS, builder, splits=splits, negative_ratio=1.0, yes_no_ratio=1.0, seed=0,
        progress=False,
    )  # fmt: skip
    assert stats.usable == 3
    kinds = {e.kind for e in examples}
    assert {"span", "abstain"} <= kinds and kinds & {"yes", "no"}
    assert {e.split for e in examples if e.doc_id == "d1"} == {splits["d1"]}
    path = tmp_path / "examples.jsonl"
    write_examples(path, examples)
    assert list(read_examples(path)) == examples
    with pytest.raises(ValueError, match="negative_ratio"):
        build_examples(QUESTIONS, builder, splits=splits, negative_ratio=2, yes_no_ratio=0, seed=0)


def test_annotated_unanswerable_questions_abstain_over_their_own_passage(
    tiny_index: Path,
) -> None:
    builder = ExampleBuilder(_ctx(tiny_index), ScriptedChatModel.from_name("fake/abstain"), seed=0)
    unanswerable = TrainingQuestion(
        Question("u1", "What is the population of Paris?", [], "d3", answerable=False)
    )
    english = QUESTIONS[2]  # its evidence is English: no yes/no question is made of it
    examples, stats = build_examples(
        [unanswerable, english], builder, splits={"d3": "train"}, negative_ratio=0,
        yes_no_ratio=1.0, seed=0, progress=False,
    )  # fmt: skip
    by_qid = {e.qid: e for e in examples}
    assert set(by_qid) == {"u1#unans", "q3"}
    own = by_qid["u1#unans"]
    assert (own.kind, own.target, own.answers) == ("abstain", ABSTENTION_PHRASE, [])
    assert "Seine" in own.prompt  # its own paragraph is read
    assert stats.unusable == 0 and stats.by_kind["train"]["abstain"] == 1


def test_short_windows_for_training_and_served_prompts_for_validation(tiny_index: Path) -> None:
    from dataclasses import replace

    ctx = _ctx(tiny_index)
    served = ExampleBuilder(ctx, ScriptedChatModel.from_name("fake/abstain"), seed=0)
    short = ExampleBuilder(replace(ctx, k=1, pad_previous=False),
                           ScriptedChatModel.from_name("fake/abstain"), seed=1)  # fmt: skip
    splits = {"d1": "train", "d2": "train", "d3": "val"}
    examples, stats = build_examples(
        QUESTIONS, served, splits=splits, negative_ratio=0, yes_no_ratio=0, seed=0,
        short_builder=short, served_share=0.0, paraphrase_share=1.0, progress=False,
    )  # fmt: skip
    by_qid = {e.qid: e for e in examples}
    assert len(by_qid["q1"].context_chunk_ids) == 1 and len(by_qid["q2"].context_chunk_ids) == 1
    val = by_qid["q3"]  # as served, as written
    assert val.prompt == served.positive(QUESTIONS[2].question, "val").prompt  # type: ignore[union-attr]
    # training questions asked in another form; the year question keeps asking for a year
    assert by_qid["q2"].question != QUESTIONS[1].question.question
    assert stats.paraphrased == 2 and by_qid["q2"].target == "১৯১৩"
    assert by_qid["q2"].question in by_qid["q2"].prompt


def test_paraphrases_keep_the_question_and_its_type() -> None:
    import random

    from kbqa.answers.language import question_type
    from kbqa.finetune.paraphrase import paraphrase

    rng = random.Random(0)
    cases = {
        "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?": {"year", "mark"},  # পান: also a noun
        "বাংলাদেশের জাতীয় ফুলের নাম কী?": {"ki", "mark"},
        "তিনি কোথায় জন্মগ্রহণ করেন ?": {"honorific", "mark"},
    }
    for question, rules in cases.items():
        seen: set[str] = set()
        for _ in range(30):
            asked, used = paraphrase(question, rng)
            assert used and set(used) <= rules and asked != question
            assert question_type(asked) == question_type(question), (question, asked)
            seen |= set(used)
        assert seen == rules
    q, used = paraphrase("ঢাকা কবে প্রতিষ্ঠিত", rng)  # কবে may ask a whole date: left alone
    assert (q, used) == ("ঢাকা কবে প্রতিষ্ঠিত", [])
    # a plain verb is not made honorific: বলা হয় (passive) and কী করে (how) would change meaning
    for plain in ("এটিকে ইংরেজিতে কোন নামে ডাকা হয়", "পাখি কেমন করে উড়ে"):
        assert paraphrase(plain, rng) == (plain, [])
    assert paraphrase("কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করেন?", random.Random(1))[0] in {
        "কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করে?", "কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করে ?",
        "কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করে", "কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করেন ?",
        "কাজী নজরুল ইসলাম কোথায় জন্মগ্রহণ করেন",
    }  # fmt: skip


def test_the_opt_in_rules_move_the_question_word_and_change_the_register() -> None:
    import random

    from kbqa.answers.language import question_type
    from kbqa.finetune.paraphrase import ALL_RULES, RULES, paraphrase

    rng = random.Random(0)
    order = ("order",)
    moved = {
        "কারা বগুড়া শহরে ককটেল বিস্ফোরণ ঘটায়?": "বগুড়া শহরে ককটেল বিস্ফোরণ ঘটায় কারা?",
        "থানার পরিদর্শক কে?": "কে থানার পরিদর্শক?",
        "কেন ব্ল্যাকহেডস হয় ?": "ব্ল্যাকহেডস হয় কেন ?",
        "মনোনয়নপত্র জমা দিয়েছেন কে": "কে মনোনয়নপত্র জমা দিয়েছেন",
    }
    for question, expected in moved.items():
        assert paraphrase(question, rng, order) == (expected, ["order"])
        assert question_type(expected) == question_type(question)
    # a question word inside the question, one that modifies the next word, or alone: kept
    for kept in ("তিনি কোথায় জন্মগ্রহণ করেন?", "কার মরদেহ উদ্ধার করা হয়?", "কে?", "কোন দল জেতে?"):
        assert paraphrase(kept, rng, order) == (kept, [])
    register = paraphrase("তাঁর পিতা কোথায় মৃত্যুবরণ করেন?", rng, ("register",))
    assert register == ("তাঁর বাবা কোথায় মারা যান?", ["register"])
    # whole words only: পিতামহ (grandfather) is not পিতা
    assert paraphrase("তাঁর পিতামহ কে?", rng, ("register",)) == ("তাঁর পিতামহ কে?", [])
    # the defaults never move or change the register
    assert "order" not in RULES and "register" not in RULES and set(RULES) < set(ALL_RULES)
    assert paraphrase("থানার পরিদর্শক কে", rng) == ("থানার পরিদর্শক কে", [])
    with pytest.raises(ValueError, match=r"'reorder'.*known: ki, "):
        paraphrase("থানার পরিদর্শক কে?", rng, ("ki", "reorder"))
    for bad_name in (["ki"], 5):
        with pytest.raises(ValueError, match="unknown paraphrase rule"):
            paraphrase("থানার পরিদর্শক কে?", rng, ("ki", bad_name))  # type: ignore[arg-type]
    for not_names in (None, 5):
        with pytest.raises(TypeError, match="tuple of rule names"):
            paraphrase("থানার পরিদর্শক কে?", rng, not_names)  # type: ignore[arg-type]
    # any iterable is read once, and the check before the rules does not use it up
    year = "রবীন্দ্রনাথ ঠাকুর কোন সালে জন্মগ্রহণ করেন?"
    as_tuple = paraphrase(year, random.Random(1), ("year", "ki"))
    assert as_tuple[1] == ["year"]
    assert paraphrase(year, random.Random(1), (r for r in ("year", "ki"))) == as_tuple
    assert paraphrase(year, random.Random(1), {"ki", "year"}) == paraphrase(
        year, random.Random(1), ("ki", "year")
    )
    for not_rng in (None, 0):
        with pytest.raises(TypeError, match=r"rng must be a random\.Random"):
            paraphrase(year, not_rng, ("year",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tuple of rule names"):
        paraphrase(year, rng, b"year")  # type: ignore[arg-type]
    # a synonym table's value is read as a list (an iterator would be used up by the check
    # that the rule applies), and a synonym that is the word itself is no rewrite
    asked = "প্রেসিডেন্ট কে ছিলেন?"
    for table in ({"প্রেসিডেন্ট": iter(["রাষ্ট্রপতি"])}, {"প্রেসিডেন্ট": ["প্রেসিডেন্ট"]}):
        assert paraphrase(asked, random.Random(0), ("synonym",), table) == (asked, [])  # type: ignore[arg-type]
    assert paraphrase(asked, random.Random(0), ("synonym",), {"প্রেসিডেন্ট": ["রাষ্ট্রপতি"]}) == (
        "রাষ্ট্রপতি কে ছিলেন?",
        ["synonym"],
    )


def test_paraphrase_rules_are_checked_and_recorded_only_when_not_the_default() -> None:
    assert ReaderConfig(train="t", kb="k").paraphrases == ("ki", "honorific", "year", "mark")
    assert "paraphrase_rules" not in ReaderConfig(train="t", kb="k").data_settings()
    cfg = ReaderConfig(train="t", kb="k", paraphrase_rules="register, order,ki")
    assert cfg.paraphrases == ("ki", "order", "register")  # applied in the module's order
    assert cfg.data_settings()["paraphrase_rules"] == "ki,order,register"
    with pytest.raises(ValueError, match=r"unknown rule\(s\) reorder"):
        ReaderConfig(train="t", kb="k", paraphrase_rules="ki,reorder")
    with pytest.raises(ValueError, match="names no rule"):
        ReaderConfig(train="t", kb="k", paraphrase_rules=" , ")


@pytest.mark.parametrize(
    ("text", "seconds"), [("2h", 7200), ("15m", 900), ("1h30m", 5400), ("90s", 90), ("45", 45)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "5x", "h", "-3", "0", "nan", "inf", "1e999"])
def test_bad_durations_are_named(bad: str) -> None:
    with pytest.raises(ValueError, match="time budget"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("trap_rules", None), ("rule_kinds", 3), ("epochs", True), ("lora_r", 2.0), ("out", None)],
)
def test_config_names_a_field_of_the_wrong_type(field: str, bad: Any) -> None:
    """From Python a wrong type is named, not an AttributeError deep in validation."""
    with pytest.raises(TypeError, match=f"{field} must be "):
        ReaderConfig(**{"train": "t", "kb": "k", field: bad})
    assert ReaderConfig(train="t", kb="k", epochs=2).epochs == 2  # an int is a float here


def test_config_names_the_bad_field() -> None:
    with pytest.raises(ValueError, match="negative_ratio must be in"):
        ReaderConfig(train="t", kb="k", negative_ratio=1.5)
    with pytest.raises(ValueError, match="max_steps"):
        ReaderConfig(train="t", kb="k", max_steps=0)
    with pytest.raises(ValueError, match="learning_rate must be a positive finite number"):
        ReaderConfig(train="t", kb="k", learning_rate=float("inf"))
    with pytest.raises(ValueError, match="save_minutes must be a positive finite number"):
        ReaderConfig(train="t", kb="k", save_minutes=float("nan"))
    with pytest.raises(ValueError, match="threads must be >= 0, got -2"):
        ReaderConfig(train="t", kb="k", threads=-2)
    with pytest.raises(ValueError, match="lr_scheduler 'bogus' is not one of"):
        ReaderConfig(train="t", kb="k", lr_scheduler="bogus")
    with pytest.raises(ValueError, match=r"seed must be in \[0, 2\*\*32\)"):
        ReaderConfig(train="t", kb="k", seed=-1)  # the Trainer refused it only after loading


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def _inputs(tmp_path: Path, doc_id: str = "d1", answerable: bool = True) -> ReaderConfig:
    kb = _write_jsonl(tmp_path / "kb.jsonl", [
        {"doc_id": "d1", "title": "ঢাকা", "text": "ঢাকা বুড়িগঙ্গা নদীর তীরে অবস্থিত।"},
        {"doc_id": "d2", "title": "প্যারিস", "text": "প্যারিস সেন নদীর তীরে।"},
    ])  # fmt: skip
    qa = _write_jsonl(tmp_path / "qa.jsonl", [
        {"qid": "q1", "question": "ঢাকা কোন নদীর তীরে?", "answers": ["বুড়িগঙ্গা"] if answerable
         else [], "answerable": answerable, "doc_id": doc_id},
    ])  # fmt: skip
    return ReaderConfig(train=str(qa), kb=str(kb), out=str(tmp_path / "out"), embedder="fake/hash")


def test_inputs_are_checked_before_anything_is_written(tmp_path: Path) -> None:
    from kbqa.errors import InputError
    from kbqa.finetune.checkpoint import last_checkpoint
    from kbqa.finetune.pipeline import check_inputs

    cfg = _inputs(tmp_path)
    check_inputs(cfg)  # fine
    with pytest.raises(InputError, match=r"none of the 1 questions .* names a doc_id"):
        check_inputs(_inputs(tmp_path, doc_id="nowhere"))
    with pytest.raises(InputError, match="no answerable question"):
        check_inputs(_inputs(tmp_path, answerable=False))
    cfg = _inputs(tmp_path)
    with pytest.raises(InputError, match="is a directory"):
        check_inputs(ReaderConfig(**{**cfg.to_dict(), "kb": str(tmp_path)}))
    (tmp_path / "afile").write_text("x")
    with pytest.raises(InputError, match=r"--out .* is a file"):
        check_inputs(ReaderConfig(**{**cfg.to_dict(), "out": str(tmp_path / "afile")}))
    # an earlier run's checkpoints: refused without --resume, before examples are rebuilt
    (tmp_path / "out" / "checkpoints" / "checkpoint-abc").mkdir(parents=True)
    assert last_checkpoint(tmp_path / "out") is None  # a stray name is not a checkpoint
    (tmp_path / "out" / "checkpoints" / "checkpoint-5").mkdir()
    (tmp_path / "out" / "checkpoints" / "checkpoint-12").mkdir()
    assert last_checkpoint(tmp_path / "out") == tmp_path / "out" / "checkpoints" / "checkpoint-12"
    with pytest.raises(InputError, match="checkpoints of an earlier run: add --resume"):
        check_inputs(cfg)
    # --resume of a checkpoint without a cursor (an older kbqa's) is refused before any work
    with pytest.raises(InputError, match=r"not a resumable checkpoint.*another --out"):
        check_inputs(ReaderConfig(**{**cfg.to_dict(), "resume": True}))


def test_split_keeps_a_document_on_each_side() -> None:
    for fraction in (0.01, 0.2, 0.99):
        splits = split_by_document(QUESTIONS, fraction, seed=0)
        assert sorted(set(splits.values())) == ["train", "val"], fraction


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time-budget", "5x"], "time budget '5x' is not a duration"),
        (["--negative-ratio", "2"], "negative_ratio must be in [0, 1], got 2.0"),
        (["--max-steps", "0"], "max_steps must be -1 or positive"),
    ],
)
def test_finetune_cli_names_bad_settings(args: list[str], message: str, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from typer.testing import CliRunner

    from kbqa.cli import app

    result = CliRunner().invoke(
        app, ["finetune", "reader", "--train", "t.jsonl", "--kb", "k.jsonl", *args]
    )
    assert result.exit_code == 2
    assert message in result.output


def test_finetune_cli_names_a_missing_file(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from typer.testing import CliRunner

    from kbqa.cli import app

    kb = tmp_path / "kb.jsonl"
    kb.write_text("{}\n")
    args = ["finetune", "reader", "--train", str(tmp_path / "nope.jsonl"), "--kb", str(kb)]
    result = CliRunner().invoke(
        app, [*args, "--out", str(tmp_path / "out"), "--embedder", "fake/hash"]
    )
    assert result.exit_code == 2
    assert "nope.jsonl" in result.output


def test_the_serving_threshold_is_the_best_answerable_f1_that_still_abstains() -> None:
    from kbqa.finetune.evaluate import CurvePoint, choose_threshold

    # threshold, F1, span F1, abstained answerable, abstained unanswerable
    curve = [
        CurvePoint(0.5, 0.48, 0.40, 0.24, 0.71),
        CurvePoint(0.8, 0.47, 0.43, 0.16, 0.60),
        CurvePoint(0.9, 0.49, 0.44, 0.10, 0.53),  # best span F1, but abstains too little
    ]
    chosen = choose_threshold(0.45, curve)
    assert chosen["abstention_threshold"] == 0.8
    assert chosen["curve"][1] == {
        "threshold": 0.8, "f1": 0.47, "span_f1": 0.43,
        "abstained_answerable": 0.16, "abstained_unanswerable": 0.6,
    }  # fmt: skip

    def chosen_at(floor: float) -> float:
        return float(
            choose_threshold(0.45, curve, min_unanswerable_abstention=floor)["abstention_threshold"]
        )

    assert chosen_at(0.5) == 0.9
    assert chosen_at(0.9) == 0.0  # no threshold keeps the floor: greedy
    assert choose_threshold(0.43, [])["abstention_threshold"] == 0.0
    # --val-examples 0: no curve, greedy (it crashed in statistics.fmean after training)
    from kbqa.finetune.evaluate import THRESHOLDS, abstention_curve

    assert abstention_curve(None, [], THRESHOLDS) == []
    assert "no validation examples" in choose_threshold(0.0, [])["why"]
