"""Verifier fine-tuning data and scoring: the builder renders the verify node's prompt, the
targets follow the reader's mistakes, and the node's rule never lets a verifier make an answer
up."""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_finetune_data import QUESTIONS, RecordingModel, _ctx

from kbqa.answers.verification import apply_verification
from kbqa.finetune.data import ExampleBuilder
from kbqa.finetune.examples import ReaderExample
from kbqa.finetune.verifier import (
    VerifierConfig,
    reader_candidates,
    score_verifier,
    verifier_example,
)
from kbqa.llm.fake import ScriptedChatModel
from kbqa.prompts import ABSTENTION_PHRASE
from kbqa.prompts.budget import prompt_budget
from kbqa.resources import Resources, retriever_for

verify_node = importlib.import_module("kbqa.nodes.verify")  # the package exports the function


def _reader_example(index: Path, i: int = 0) -> tuple[ReaderExample, Any]:
    ctx = _ctx(index)
    builder = ExampleBuilder(ctx, RecordingModel(model_name="fake/rec", script=["x"]), seed=0)
    example = builder.positive(QUESTIONS[i].question, "train")
    assert example is not None
    return example, retriever_for(ctx).chunks


@pytest.mark.parametrize(("candidate", "abstained"), [("বুড়িগঙ্গা", False), ("ঢাকা", False),
                                                      (ABSTENTION_PHRASE, True)])  # fmt: skip
def test_training_prompt_equals_what_the_verify_node_sends(
    tiny_index: Path, candidate: str, abstained: bool
) -> None:
    reader_ex, chunks = _reader_example(tiny_index)
    ctx = _ctx(tiny_index)
    model = RecordingModel(model_name="fake/rec-verifier", script=[candidate])
    example = verifier_example(reader_ex, candidate, abstained, chunks, model,
                               prompt_budget(ctx.n_ctx, ctx.max_verify_tokens))  # fmt: skip
    ctx = replace(ctx, resources=Resources(verifier=model))  # the verifier, handed in
    state = {"question": reader_ex.question, "question_type": reader_ex.question_type,
             "language": reader_ex.language, "context_chunk_ids": reader_ex.context_chunk_ids,
             "answer": candidate, "abstained": abstained}  # fmt: skip
    model.prompts.clear()
    verify_node.verify(state, SimpleNamespace(context=ctx))
    assert model.prompts == [example.prompt]
    assert f"Candidate answer: {candidate}" in example.prompt
    assert example.prompt.endswith("Verified answer:")
    assert example.candidate == candidate


def test_targets_follow_what_the_reader_got_wrong(tiny_index: Path) -> None:
    reader_ex, chunks = _reader_example(tiny_index)  # gold: বুড়িগঙ্গা
    counter = ScriptedChatModel.from_name("fake/abstain")

    def made(candidate: str, abstained: bool, ex: ReaderExample = reader_ex) -> tuple[str, str]:
        v = verifier_example(ex, candidate, abstained, chunks, counter, 4000)
        return v.kind, v.target

    assert made("বুড়িগঙ্গা।", False) == ("keep", "বুড়িগঙ্গা।")  # right: repeat it as written
    assert made("ঢাকা", False) == ("fix", "বুড়িগঙ্গা")
    assert made(ABSTENTION_PHRASE, True) == ("answer", "বুড়িগঙ্গা")
    negative = ReaderExample(**{**reader_ex.to_dict(), "kind": "abstain", "answers": [],
                                "target": ABSTENTION_PHRASE})  # fmt: skip
    assert made("ঢাকা", False, negative) == ("abstain", ABSTENTION_PHRASE)


def test_candidates_are_generated_as_served_and_resume(tiny_index: Path, tmp_path: Path) -> None:
    reader_ex, chunks = _reader_example(tiny_index)
    ctx = _ctx(tiny_index)
    reader = RecordingModel(model_name="fake/rec-reader", script=["বুড়িগঙ্গা"])
    path = tmp_path / "candidates.jsonl"
    got = reader_candidates(reader, [reader_ex], chunks, ctx, path)
    assert got == {reader_ex.qid: ("বুড়িগঙ্গা", False)}
    assert reader.prompts == [reader_ex.prompt]  # the reader read what serving shows
    again = RecordingModel(model_name="fake/rec-reader2", script=["other"])
    assert reader_candidates(again, [reader_ex], chunks, ctx, path) == got
    assert again.prompts == []  # nothing generated twice


def test_scores_count_changes_helps_and_refused_inventions(tiny_index: Path) -> None:
    reader_ex, chunks = _reader_example(tiny_index)
    counter = ScriptedChatModel.from_name("fake/abstain")
    wrong = verifier_example(reader_ex, "ঢাকা", False, chunks, counter, 4000)
    right = verifier_example(reader_ex, "বুড়িগঙ্গা", False, chunks, counter, 4000)
    # the verifier fixes the wrong one, then invents for the right one (refused), then abstains
    verifier = ScriptedChatModel.from_name("fake/script:বুড়িগঙ্গা|মেঘনা|" + ABSTENTION_PHRASE)
    scores = score_verifier(verifier, [wrong, right, right], chunks)
    assert (scores.n, scores.changed, scores.helped, scores.hurt) == (3, 1, 1, 0)
    assert scores.ungrounded == 1
    assert scores.f1_after > scores.f1_before
    assert scores.by_kind["fix"]["changed"] == 1 and scores.by_kind["keep"]["changed"] == 0


@pytest.mark.parametrize(
    ("candidate", "abstained", "verified", "v_abstained", "expected"),
    [
        ("ঢাকা", False, "মেঘনা", False, ("ঢাকা", False, False, "verify: ungrounded")),
        ("ঢাকা", False, "বুড়িগঙ্গা", False, ("বুড়িগঙ্গা", False, True, None)),
        ("ঢাকা", False, ABSTENTION_PHRASE, True, ("ঢাকা", False, False, None)),
        (ABSTENTION_PHRASE, True, "বুড়িগঙ্গা", False, ("বুড়িগঙ্গা", False, True, None)),
        (ABSTENTION_PHRASE, True, "1920°C", False, (ABSTENTION_PHRASE, True, False,
                                                   "verify: ungrounded")),
    ],
)  # fmt: skip
def test_the_verifier_cannot_turn_an_answer_into_an_ungrounded_one(
    candidate: str, abstained: bool, verified: str, v_abstained: bool, expected: tuple
) -> None:
    passages = ["ঢাকা বাংলাদেশের রাজধানী। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।"]
    verdict = apply_verification(candidate, abstained, verified, v_abstained, passages)
    assert (verdict.answer, verdict.abstained, verdict.changed, verdict.status) == expected


def test_verifier_config_names_bad_values() -> None:
    assert VerifierConfig(train="t", kb="k").out == "runs/finetune-verifier"
    with pytest.raises(ValueError, match="max_verify_tokens must be positive"):
        VerifierConfig(train="t", kb="k", max_verify_tokens=0)


def test_a_verifier_adapter_is_served_on_the_generators_base(tmp_path: Path) -> None:
    from kbqa.context import Context
    from kbqa.resources import verifier_name

    ctx = Context(model="gemma3-270m-reader", verifier_adapter=str(tmp_path), web_search="off")
    assert verifier_name(ctx) == "gemma3-270m-reader"  # not the quality model, if installed
    chosen = Context(model="gemma3-270m-reader", verifier_adapter=str(tmp_path),
                     verifier_model="gemma3-270m", web_search="off")  # fmt: skip
    assert verifier_name(chosen) == "gemma3-270m"


def test_the_default_verifier_is_the_generator_not_whichever_is_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kbqa.llm.models as models
    from kbqa.context import Context
    from kbqa.resources import verifier_name

    # every model installed, Qwen too, say (an earlier resources chose the verifier by this
    # check; the patch is of the function that exists, so it cannot silently do nothing)
    monkeypatch.setattr(models, "model_installed", lambda name: True)
    assert models.model_installed("qwen2.5-coder-1.5b")
    assert verifier_name(Context(model="gemma3-270m-reader", web_search="off")) == (
        "gemma3-270m-reader"
    )


def test_a_window_too_small_for_the_verifier_is_refused_before_any_work() -> None:
    with pytest.raises(ValueError, match=r"n_ctx \(100\) must be at least max_verify_tokens"):
        VerifierConfig(train="t", kb="k", n_ctx=100, max_answer_tokens=30, max_verify_tokens=60)
