"""Reader fine-tuning on a tiny randomly initialised Gemma 3 (built by the test, in seconds): the
loss sees answer tokens only, training changes the adapter and not the base, and the exported
adapter runs in llama.cpp with the same numbers as in transformers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import tiny_gemma_base

from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.examples import ReaderExample
from kbqa.prompts import ABSTENTION_PHRASE

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    from tiny_gemma import LlamaTokenizer, tiny_gemma_gguf

    from kbqa.llm.models import resolve_model

    root = tmp_path_factory.mktemp("tiny")
    path = tiny_gemma_gguf(resolve_model("gemma3-270m")[0], root / "tiny.gguf")
    return path, LlamaTokenizer(path)


_LOADED: dict[Path, Any] = {}


def _tiny_model(path: Path) -> Any:
    """A fresh copy of the tiny model as transformers loads it from the GGUF (parsed once)."""
    import copy

    from transformers import AutoModelForCausalLM

    from kbqa.finetune.base import plain_float_model

    if path not in _LOADED:
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32
        )
        _LOADED[path] = plain_float_model(model)
    torch.manual_seed(0)
    return copy.deepcopy(_LOADED[path])


def _examples(n: int) -> list[ReaderExample]:
    targets = ["বুড়িগঙ্গা", ABSTENTION_PHRASE, "হ্যাঁ", "১৯১৩ সালে"]
    return [
        ReaderExample(
            f"q{i}",
            "span",
            "train",
            "d",
            "প্রশ্ন?",
            f"Context:\n[1] ঢাকা: ঢাকা শহর {'বড় ' * i}\nQuestion: প্রশ্ন {i}?\nAnswer:",
            targets[i % len(targets)],
            [targets[i % len(targets)]],
            "other",
            "bn",
        )
        for i in range(n)
    ]


def test_collator_masks_prompt_and_padding(tiny: tuple[Path, Any]) -> None:
    from kbqa.finetune.loss import IGNORE, LeftPadCollator, encode_example

    _, tok = tiny
    feats = [encode_example(tok, e) for e in _examples(3)]
    batch = LeftPadCollator(tok.pad_token_id)(feats)
    for row, f in enumerate(feats):
        n_answer = sum(label != IGNORE for label in f["labels"])
        labels = batch["labels"][row].tolist()
        assert all(label == IGNORE for label in labels[: len(labels) - n_answer])
        assert labels[-n_answer:] == f["input_ids"][-n_answer:]
        assert labels[-1] == tok.eos_token_id
        assert batch["attention_mask"][row].sum() == len(f["input_ids"])


def test_answer_loss_counts_answer_tokens_only(tiny: tuple[Path, Any]) -> None:
    import torch.nn.functional as F

    from kbqa.finetune.loss import IGNORE, LeftPadCollator, answer_loss, encode_example

    path, tok = tiny
    model = _tiny_model(path)
    batch = LeftPadCollator(tok.pad_token_id)([encode_example(tok, e) for e in _examples(3)])
    with torch.no_grad():
        ours = answer_loss(model, batch)
        inputs = {k: v for k, v in batch.items() if k != "labels"}
        logits = model(**inputs).logits[:, :-1]
        labels = batch["labels"][:, 1:]
        reference = F.cross_entropy(
            logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE
        )
        # the prompt tokens' own predictions carry no loss: changing prompt labels changes nothing
        assert torch.allclose(ours, reference, atol=1e-5)
        # under gradient accumulation the sum is divided by the tokens of the whole batch
        n = int((batch["labels"] != IGNORE).sum())
        assert torch.allclose(answer_loss(model, batch, 2 * n), reference / 2, atol=1e-5)
    right_padded = {k: v.flip(1) for k, v in batch.items()}
    with pytest.raises(ValueError, match="pad batches on the left"):
        answer_loss(model, right_padded)


def test_tiny_training_changes_the_adapter_not_the_base(
    tiny: tuple[Path, Any], tmp_path: Path
) -> None:
    from kbqa.finetune.train import lora_model, plot_loss, train_reader

    path, tok = tiny
    cfg = ReaderConfig(
        train="t",
        kb="k",
        max_steps=4,
        batch_size=2,
        learning_rate=5e-3,
        warmup_steps=0,
        bf16=False,
        threads=1,
        out=str(tmp_path),
    )
    model = lora_model(_tiny_model(path), cfg)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    result = train_reader(model, tok, _examples(6), _examples(2), cfg, tmp_path)
    assert result.steps == 4 and not result.interrupted and result.eval_loss is not None
    after = dict(model.named_parameters())
    lora_b = [n for n in before if "lora_B" in n]
    base = [n for n in before if "lora_" not in n]
    assert lora_b and all(not torch.equal(before[n], after[n]) for n in lora_b)
    assert base and all(torch.equal(before[n], after[n]) for n in base)
    # issue 36: a short run logs every step, so its loss.png has a curve, not only a legend
    assert [h["step"] for h in result.log_history if "loss" in h] == [1, 2, 3, 4]
    plot_loss(result.log_history, tmp_path / "loss.png")
    assert (tmp_path / "loss.png").stat().st_size > 1000


def test_exported_adapter_runs_in_llama_cpp_like_transformers(
    tiny: tuple[Path, Any], tmp_path: Path
) -> None:
    from peft import get_peft_model_state_dict

    from kbqa.finetune.export import lora_tensor_pairs, write_lora_gguf
    from kbqa.finetune.parity import check_parity
    from kbqa.finetune.train import lora_model
    from kbqa.llm.lora import KV_BASE_SHA256, load_adapter

    path, tok = tiny
    model = lora_model(_tiny_model(path), ReaderConfig(train="t", kb="k", lora_r=4, lora_alpha=8))
    with torch.no_grad():  # a trained-looking adapter: B is zero at initialisation
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.2)
    model.eval()
    pairs = lora_tensor_pairs(get_peft_model_state_dict(model), "gemma3", 2)
    assert len(pairs) == 2 * 7
    adapter = write_lora_gguf(
        pairs,
        8,
        tmp_path / "adapter.gguf",
        arch="gemma3",
        metadata={KV_BASE_SHA256: "x" * 64},
        dtype="f32",
    )
    assert load_adapter(str(adapter)).base_sha256 == "x" * 64
    prompts = ["Context:\n[1] ঢাকা বাংলাদেশের রাজধানী।\nQuestion: রাজধানী?\nAnswer:", "Paris is"]
    with_adapter = check_parity(model, tok, path, prompts, lora_path=adapter, n_threads=1)
    assert with_adapter.argmax_agreement == 1.0
    assert with_adapter.median_abs_logprob_diff < 1e-3
    with model.disable_adapter():  # llama.cpp really applied it: without it the two disagree
        without = check_parity(model, tok, path, prompts, lora_path=adapter, n_threads=1)
    assert without.median_abs_logprob_diff > 10 * with_adapter.median_abs_logprob_diff


def test_export_names_a_damaged_checkpoint(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    from kbqa.errors import InputError
    from kbqa.finetune.export import export_checkpoint

    ckpt = tmp_path / "checkpoint-3"
    ckpt.mkdir()
    (ckpt / "adapter_model.safetensors").write_bytes(b"junk")
    (ckpt / "adapter_config.json").write_text('{"r": 4, "lora_alpha": 8}')
    with pytest.raises(InputError, match="not a readable safetensors file"):
        export_checkpoint(ckpt, tmp_path / "out")
    save_file({"x": torch.zeros(2)}, str(ckpt / "adapter_model.safetensors"))
    for config in ("{not json", '{"r": 4}', "[1]"):
        (ckpt / "adapter_config.json").write_text(config)
        with pytest.raises(InputError, match="not a peft LoRA config with r and lora_alpha"):
            export_checkpoint(ckpt, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing left behind


def _checkpoint(path: Path, r: int = 4, alpha: Any = 8, value: float = 0.01) -> Path:
    import json

    from safetensors.torch import save_file

    path.mkdir(parents=True, exist_ok=True)
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    state = {
        f"{prefix}.lora_A.weight": torch.full((4, 640), value),
        f"{prefix}.lora_B.weight": torch.full((1024, 4), value),
    }
    save_file(state, str(path / "adapter_model.safetensors"))
    (path / "adapter_config.json").write_text(json.dumps({"r": r, "lora_alpha": alpha}))
    return path


@pytest.fixture
def tiny_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tiny random Gemma base GGUF, with kbqa's cache in the test's folder."""
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "cache"))
    return str(tiny_gemma_base(tmp_path / "base.gguf"))


def test_export_refuses_values_llama_cpp_would_crash_or_serve_garbage_on(
    tmp_path: Path, tiny_base: str
) -> None:
    from kbqa.errors import InputError
    from kbqa.finetune.export import export_checkpoint

    base = tiny_base
    out = tmp_path / "out"
    adapter = export_checkpoint(_checkpoint(tmp_path / "good"), out, base)  # the control
    assert adapter.is_file() and (out / "manifest.json").is_file()
    cases = {
        "nan-alpha": ({"alpha": float("nan")}, "lora_alpha must be a finite number > 0"),
        "zero-alpha": ({"alpha": 0}, "lora_alpha must be a finite number > 0"),
        "bool-alpha": ({"alpha": True}, "lora_alpha must be a number"),
        "r-mismatch": ({"r": 64}, "the config says r=64"),
        "r-zero": ({"r": 0}, "r must be a positive integer"),
        "nan-weights": ({"value": float("nan")}, "NaN or infinite weights"),
    }
    for name, (kwargs, message) in cases.items():
        with pytest.raises(InputError, match=message):
            export_checkpoint(_checkpoint(tmp_path / name, **kwargs), tmp_path / f"o-{name}", base)
        assert not (tmp_path / f"o-{name}").exists()
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(InputError, match="not a readable base model GGUF"):
        export_checkpoint(tmp_path / "good", tmp_path / "o-junk", str(junk))


def test_export_keeps_the_role_of_the_run_and_no_machine_path(
    tmp_path: Path, tiny_base: str
) -> None:
    import json

    from kbqa.errors import InputError
    from kbqa.finetune.export import export_checkpoint

    base = tiny_base
    run = tmp_path / "run"
    ckpt = _checkpoint(run / "checkpoints" / "checkpoint-2")
    export_checkpoint(ckpt, tmp_path / "plain", base)  # no adapter exported yet: a reader
    assert "role" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())
    (run / "adapter").mkdir()
    (run / "adapter" / "manifest.json").write_text('{"role": "reranker"}')
    export_checkpoint(ckpt, tmp_path / "again", base)
    manifest = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert manifest["role"] == "reranker" and manifest["checkpoint"] == "checkpoint-2"
    assert str(tmp_path) not in json.dumps(manifest)
    export_checkpoint(ckpt, tmp_path / "told", base, role="verifier")
    assert json.loads((tmp_path / "told" / "manifest.json").read_text())["role"] == "verifier"
    with pytest.raises(InputError, match="role must be one of reader, verifier, reranker"):
        export_checkpoint(ckpt, tmp_path / "bad", base, role="writer")


def test_a_failed_export_leaves_the_previous_adapter_as_it_was(
    tmp_path: Path, tiny_base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.errors import InputError
    from kbqa.finetune import export

    base = tiny_base
    out = tmp_path / "out"
    export.export_checkpoint(_checkpoint(tmp_path / "first"), out, base)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = _checkpoint(tmp_path / "second", value=0.02)
    (second / "progress.json").write_text("{not json")
    with pytest.raises(InputError, match=r"progress\.json is not readable JSON"):
        export.export_checkpoint(second, out, base)
    (second / "progress.json").unlink()

    def disk_full(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(export, "write_lora_gguf", disk_full)
    with pytest.raises(InputError, match=r"could not write the adapter to .*out.*No space left"):
        export.export_checkpoint(second, out, base)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staged leftovers
