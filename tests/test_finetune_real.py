"""The reader fine-tuning path on the real Gemma 3 270M: transformers and llama.cpp agree on the
base, the shipped adapter loads and changes what the model says, and `kbqa finetune reader`
(50 real training questions) and `kbqa finetune verifier` (16, with the shipped reader's own
answers as candidates) run end to end.

Needs the finetune extra (torch, transformers, peft) and, for the last test, ``../shared/data``
or ``$KBQA_DATA_DIR``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import data_dir

from kbqa.llm.models import MODELS, load_chat_model, resolve_model
from kbqa.prompts import (
    ABSTENTION_PHRASE,
    ANSWER_STOP,
    Passage,
    prompt_text,
    render_answer_prompt,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PROMPTS = [
    "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।",
    "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন। গীতাঞ্জলি কাব্যগ্রন্থের জন্য",
    "The Seine is a river in northern France. It flows through",
]
GOLDEN = [  # (question, passage, a span the tuned reader must copy)
    (
        "ঢাকা কোন নদীর তীরে অবস্থিত?",
        "ঢাকা বাংলাদেশের রাজধানী। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।",
        "বুড়িগঙ্গা",
    ),
    (
        "রবীন্দ্রনাথ ঠাকুর কত সালে জন্মগ্রহণ করেন?",
        "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন।",
        "১৮৬১",
    ),
]


def test_transformers_and_llama_cpp_agree_on_the_base(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from kbqa.finetune.base import load_base
    from kbqa.finetune.parity import check_parity, write_float32_gguf

    gguf = resolve_model("gemma3-270m")[0]
    model, tokenizer = load_base(gguf, sha256=MODELS["gemma3-270m"].sha256)
    exact = check_parity(model, tokenizer, write_float32_gguf(gguf, tmp_path / "f32.gguf"), PROMPTS)
    assert exact.tokenization_equal == 1.0  # BOS included
    assert exact.argmax_agreement == 1.0 and exact.median_abs_logprob_diff < 0.01
    quantised = check_parity(model, tokenizer, gguf, PROMPTS)
    # llama.cpp quantises activations to 8 bits for Q4_K/Q5_0 weights: close, not equal
    assert quantised.argmax_agreement > 0.7 and quantised.median_abs_logprob_diff < 0.5


def test_shipped_adapter_loads_and_changes_outputs() -> None:
    from kbqa.llm.chat import LlamaCppChatModel

    tuned = load_chat_model("gemma3-270m-reader", 2048, 0)
    assert isinstance(tuned, LlamaCppChatModel) and tuned.adapter.endswith("adapter.gguf")
    assert tuned.prompt_style == "tuned"
    base = LlamaCppChatModel.from_path(
        resolve_model("gemma3-270m")[0], model_name="base", prompt_style="tuned", n_ctx=2048
    )
    changed = 0
    for question, passage, span in GOLDEN:
        messages = render_answer_prompt(question, [Passage("", passage)], style="tuned")
        # llama-cpp-python has silently dropped adapters after upgrades: the scores must differ
        ids = base._llama.tokenize(prompt_text(messages).encode(), add_bos=True, special=True)
        last = []
        for llm in (base._llama, tuned._llama):
            llm.reset()
            llm.eval(ids)  # llama-cpp-python 0.3.x keeps `scores` only with logits_all
            last.append(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy())
        assert np.isfinite(last[0]).all() and np.abs(last[0]).max() > 1.0  # real logits were read
        diff = np.abs(last[0] - last[1]).max()
        changed += diff > 0.5
        answer = str(
            tuned.invoke(
                messages, stop=ANSWER_STOP, max_tokens=16,
                # as served: the manifest's threshold and constrained grounding (ungrounded,
                # the tuned reader writes ১৮৬১ as 1861)
                abstention_threshold=tuned.reader_abstention_threshold,
                abstention_phrase=ABSTENTION_PHRASE,
                grounding=[passage], fixed=[ABSTENTION_PHRASE],
            ).content
        )  # fmt: skip
        # the shipped reader over-abstains on such short passages (docs/finetune.md): it must
        # copy the span or abstain, never make something up
        assert span in answer or ABSTENTION_PHRASE in answer, (question, answer)
    assert changed == len(GOLDEN)


def test_finetune_reader_cli_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    from typer.testing import CliRunner

    from kbqa.cli import app

    train = data / "bn" / "train"
    out = tmp_path / "run"
    args = [
        "finetune", "reader", "--train", str(train / "haque2020.qa.jsonl"),
        "--kb", str(train / "haque2020_kb.jsonl"), "--embedder", "fake/hash",
        "--max-questions", "50", "--max-steps", "5", "--batch-size", "2",
        "--val-examples", "10", "--out", str(out),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "adapter" / "manifest.json").read_text())
    assert manifest["training"]["steps"] == 5
    assert manifest["base_sha256"] == MODELS["gemma3-270m"].sha256
    assert manifest["examples"]["by_kind"]["train"]["abstain"] > 0
    assert 0 <= manifest["serving"]["abstention_threshold"] <= 1  # chosen on validation
    assert (out / "loss.png").is_file() and (out / "adapter" / "adapter.gguf").is_file()
    served = load_chat_model("gemma3-270m", 2048, 0, adapter=str(out / "adapter"))
    assert served.prompt_style == "tuned"  # type: ignore[attr-defined]


def test_finetune_verifier_cli_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("peft")
    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    from typer.testing import CliRunner

    from kbqa.cli import app

    train = data / "bn" / "train"
    out = tmp_path / "verifier"
    args = [
        "finetune", "verifier", "--train", str(train / "haque2020.qa.jsonl"),
        "--kb", str(train / "haque2020_kb.jsonl"), "--embedder", "fake/hash",
        "--max-questions", "16", "--max-steps", "3", "--batch-size", "2",
        "--val-examples", "4", "--out", str(out),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "verification   F1" in result.output
    manifest = json.loads((out / "adapter" / "manifest.json").read_text())
    assert manifest["role"] == "verifier" and manifest["training"]["steps"] == 3
    kinds = manifest["examples"]["by_kind"]["train"]
    assert sum(kinds.values()) > 0 and set(kinds) <= {"keep", "fix", "answer", "abstain"}
    assert manifest["validation"]["n"] > 0
    lines = (out / "candidates.jsonl").read_text("utf-8").splitlines()
    assert len(lines) == manifest["examples"]["candidates"]["n"]  # the reader's own answers
    served = load_chat_model("gemma3-270m-reader", 2048, 0, role="verifier",
                             adapter=str(out / "adapter"))  # fmt: skip
    assert served.prompt_style == "tuned"  # type: ignore[attr-defined]
