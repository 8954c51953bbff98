"""Training that survives a change of machine: the seeded epoch order, checkpoints of adapter and
cursor only, and a run stopped, copied into a fresh directory (as a commit carries it to a new
clone) and resumed there on a tiny randomly initialised Gemma 3."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_finetune_train import _examples, _tiny_model, tiny  # noqa: F401  (fixture)

from kbqa.errors import InputError
from kbqa.finetune.checkpoint import epoch_order, examples_fingerprint, read_cursor
from kbqa.finetune.config import ReaderConfig

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")


def test_epoch_order_sees_every_example_once_an_epoch_and_is_seeded() -> None:
    order = epoch_order(10, 2.5, seed=3)
    assert len(order) == 25
    assert sorted(order[:10]) == list(range(10)) and sorted(order[10:20]) == list(range(10))
    assert len(set(order[20:])) == 5  # the half epoch: no repeat either
    assert order[:10] != order[10:20]  # each epoch its own permutation
    assert epoch_order(10, 2.5, seed=3) == order and epoch_order(10, 2.5, seed=4) != order
    with pytest.raises(ValueError, match="epochs > 0"):
        epoch_order(10, 0, seed=0)


def _cfg(out: Path, **kw: Any) -> ReaderConfig:
    settings: dict[str, Any] = {"train": "t", "kb": "k", "batch_size": 1, "grad_accum": 2,
                                "learning_rate": 5e-3, "warmup_steps": 0, "threads": 1,
                                "lr_scheduler": "constant", "out": str(out)}  # fmt: skip
    return ReaderConfig(**(settings | kw))


def _loss(model: Any, tok: Any, examples: list[Any]) -> float:
    from kbqa.finetune.loss import LeftPadCollator, answer_loss, encode_example

    batch = LeftPadCollator(tok.pad_token_id)([encode_example(tok, e) for e in examples])
    with torch.no_grad():
        return float(answer_loss(model, batch))


def test_a_run_stopped_copied_to_a_fresh_clone_and_resumed_goes_on(
    tiny: tuple[Path, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from kbqa.finetune.train import lora_model, train_reader

    path, tok = tiny
    train, probe = _examples(8), _examples(4)
    first_out, committed = tmp_path / "machine-a", tmp_path / "repo" / "training" / "reader"
    cfg = _cfg(first_out, max_steps=3, epochs=2.0, checkpoint_copy=str(committed))
    first = lora_model(_tiny_model(path), cfg)
    fresh_loss = _loss(first, tok, probe)
    result = train_reader(first, tok, train, [], cfg, first_out)
    assert result.steps == 3 and result.examples_seen == 6 and not result.finished
    trained_loss = _loss(first, tok, probe)
    assert trained_loss < fresh_loss

    # the committed copy holds the newest checkpoint only, adapter and cursor, small
    assert sorted(p.name for p in committed.iterdir()) == [
        "adapter_config.json", "adapter_model.safetensors", "cursor.json", "progress.json",
    ]  # fmt: skip
    cursor = read_cursor(committed)
    assert (cursor.step, cursor.consumed, cursor.total) == (3, 6, 16)
    assert cursor.fingerprint == examples_fingerprint(train)
    assert [h["step"] for h in cursor.log_history] == [1, 2, 3]  # a short run logs every step

    # a fresh clone on a new machine: nothing but the committed directory
    clone = tmp_path / "clone"
    shutil.copytree(committed, clone / "training" / "reader")
    shutil.rmtree(first_out)
    second_out = clone / "runs" / "reader"
    cfg2 = _cfg(second_out, max_steps=8, epochs=2.0, restart_warmup_steps=2)
    second = lora_model(_tiny_model(path), cfg2)
    from kbqa.finetune.checkpoint import load_adapter_weights

    load_adapter_weights(second, clone / "training" / "reader")  # the loss goes on from there
    assert _loss(second, tok, probe) == pytest.approx(trained_loss, abs=1e-6)
    second = lora_model(_tiny_model(path), cfg2)
    resumed = train_reader(second, tok, train, [], cfg2, second_out, clone / "training" / "reader")
    assert resumed.steps == 8 and resumed.examples_seen == 16 and resumed.finished
    # the first session's losses kept, the second's numbered as the run's steps (4 to 8)
    assert [h["step"] for h in resumed.log_history] == [1, 2, 3, 4, 5, 6, 7, 8]
    last = read_cursor(second_out / "checkpoints" / "checkpoint-8")
    assert last.elapsed_seconds >= cursor.elapsed_seconds
    assert [h["step"] for h in last.log_history][-1] == 8  # the loss logged at the saved step
    config = json.loads(
        (second_out / "checkpoints" / "checkpoint-8" / "adapter_config.json").read_text()
    )
    assert config["base_model_name_or_path"] == cursor.base_model != ""  # no machine path

    # resuming the finished run trains nothing and keeps its weights (to export it again)
    again = lora_model(_tiny_model(path), cfg2)
    finished_loss = _loss(resumed_model := second, tok, probe)
    done = train_reader(again, tok, train, [], cfg2, second_out,
                        second_out / "checkpoints" / "checkpoint-8")  # fmt: skip
    assert done.steps == 8 and done.finished and not done.interrupted
    assert _loss(again, tok, probe) == pytest.approx(finished_loss, abs=1e-6)
    del resumed_model


def test_resuming_over_other_examples_or_another_batch_shape_is_refused(
    tiny: tuple[Path, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from kbqa.finetune.train import lora_model, train_reader

    path, tok = tiny
    cfg = _cfg(tmp_path / "a", max_steps=1)
    train_reader(lora_model(_tiny_model(path), cfg), tok, _examples(6), [], cfg, tmp_path / "a")
    ckpt = tmp_path / "a" / "checkpoints" / "checkpoint-1"
    cfg2 = _cfg(tmp_path / "b", max_steps=3)
    with pytest.raises(InputError, match="trained on other examples"):
        train_reader(lora_model(_tiny_model(path), cfg2), tok, _examples(7), [], cfg2,
                     tmp_path / "b", ckpt)  # fmt: skip
    cfg3 = _cfg(tmp_path / "c", max_steps=3, grad_accum=3)
    with pytest.raises(InputError, match="examples a step"):
        train_reader(lora_model(_tiny_model(path), cfg3), tok, _examples(6), [], cfg3,
                     tmp_path / "c", ckpt)  # fmt: skip
    cfg4 = _cfg(tmp_path / "d", max_steps=3, lora_r=8)
    with pytest.raises(InputError, match="LoRA r"):
        train_reader(lora_model(_tiny_model(path), cfg4), tok, _examples(6), [], cfg4,
                     tmp_path / "d", ckpt)  # fmt: skip
    good = json.loads((ckpt / "cursor.json").read_text())
    for field, bad, said in (("fingerprint", 123, "fingerprint is 123, not str"),
                             ("step", "abc", "step is 'abc', not int"),
                             ("format", "1", "has format '1', this kbqa reads 1")):  # fmt: skip
        (ckpt / "cursor.json").write_text(json.dumps({**good, field: bad}))
        with pytest.raises(InputError, match=said):
            read_cursor(ckpt)
    (ckpt / "cursor.json").write_text(json.dumps(good))
    weights = ckpt / "adapter_model.safetensors"
    whole = weights.read_bytes()
    weights.write_bytes(whole[:1000])
    with pytest.raises(InputError, match="not a safetensors file"):
        read_cursor(ckpt)
    weights.write_bytes(whole)
    assert read_cursor(ckpt).step == 1
    (ckpt / "cursor.json").write_text(json.dumps({"step": 1}))
    with pytest.raises(InputError, match="not a training cursor: it lacks consumed"):
        read_cursor(ckpt)
    (ckpt / "cursor.json").write_text("[]")
    with pytest.raises(InputError, match="not a JSON object"):
        read_cursor(ckpt)
    (ckpt / "cursor.json").unlink()
    with pytest.raises(InputError, match="not a resumable checkpoint"):
        read_cursor(ckpt)


def test_a_new_run_on_other_examples_starts_from_a_trained_adapter(
    tiny: tuple[Path, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from kbqa.finetune.checkpoint import check_adapter_folder
    from kbqa.finetune.train import lora_model, train_reader

    path, tok = tiny
    probe = _examples(4)
    cfg = _cfg(tmp_path / "a", max_steps=3)
    first = lora_model(_tiny_model(path), cfg)
    train_reader(first, tok, _examples(6), [], cfg, tmp_path / "a")
    trained = tmp_path / "a" / "checkpoints" / "checkpoint-3"
    # other examples (a resume would refuse them): a new run, from the trained weights
    cfg2 = _cfg(tmp_path / "b", max_steps=1, learning_rate=1e-9, init_adapter=str(trained))
    second = lora_model(_tiny_model(path), cfg2)
    fresh = _loss(second, tok, probe)
    result = train_reader(second, tok, _examples(7), [], cfg2, tmp_path / "b")
    assert result.steps == 1  # a new run's numbering
    assert _loss(second, tok, probe) == pytest.approx(_loss(first, tok, probe), abs=1e-4)
    assert _loss(second, tok, probe) != pytest.approx(fresh, abs=1e-4)
    check_adapter_folder(trained, cfg.lora_r, cfg.lora_alpha)  # the checks before any build
    with pytest.raises(InputError, match="has LoRA r 16, these settings 8"):
        check_adapter_folder(trained, 8, cfg.lora_alpha)
    cfg_r8 = _cfg(tmp_path / "c", max_steps=1, lora_r=8, init_adapter=str(trained))
    with pytest.raises(InputError, match="LoRA r"):
        train_reader(lora_model(_tiny_model(path), cfg_r8), tok, _examples(6), [], cfg_r8,
                     tmp_path / "c")  # fmt: skip
    # an adapter of other modules: part of this model's LoRA tensors, refused by name
    from safetensors.torch import load_file, save_file

    from kbqa.finetune.checkpoint import load_adapter_weights

    partial = tmp_path / "partial"
    shutil.copytree(trained, partial)
    weights = load_file(str(partial / "adapter_model.safetensors"))
    save_file({k: v for k, v in weights.items() if "q_proj" in k},
              str(partial / "adapter_model.safetensors"))  # fmt: skip
    with pytest.raises(InputError, match=r"lacks \d+ of this model's LoRA tensors"):
        load_adapter_weights(lora_model(_tiny_model(path), cfg), partial)


def test_a_new_run_starts_from_an_exported_adapter_gguf(
    tiny: tuple[Path, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    """``--init-adapter`` takes an exported adapter (the shipped reader keeps only its
    ``adapter.gguf``): its weights, read back from float16, go on as the checkpoint's did."""
    from peft import get_peft_model_state_dict

    from kbqa.finetune.checkpoint import check_adapter_folder, load_adapter_weights
    from kbqa.finetune.export import lora_tensor_pairs, write_lora_gguf
    from kbqa.finetune.train import lora_model, train_reader
    from kbqa.llm.lora import KV_BASE_SHA256

    path, tok = tiny
    probe = _examples(4)
    cfg = _cfg(tmp_path / "a", max_steps=3)
    first = lora_model(_tiny_model(path), cfg)
    train_reader(first, tok, _examples(6), [], cfg, tmp_path / "a")
    layers = int(first.config.num_hidden_layers)
    pairs = lora_tensor_pairs(get_peft_model_state_dict(first), "gemma3", layers)
    exported = tmp_path / "shipped"
    exported.mkdir()
    write_lora_gguf(pairs, cfg.lora_alpha, exported / "adapter.gguf", arch="gemma3",
                    metadata={KV_BASE_SHA256: "0" * 64})  # fmt: skip
    for given in (exported, exported / "adapter.gguf"):  # the folder or its file
        check_adapter_folder(given, cfg.lora_r, cfg.lora_alpha, exported=True)
        second = lora_model(_tiny_model(path), cfg)
        load_adapter_weights(second, given)
        assert _loss(second, tok, probe) == pytest.approx(_loss(first, tok, probe), abs=1e-3)
    fresh = _loss(lora_model(_tiny_model(path), cfg), tok, probe)
    assert _loss(second, tok, probe) != pytest.approx(fresh, abs=1e-3)
    with pytest.raises(InputError, match="has LoRA r 16, these settings 8"):
        check_adapter_folder(exported, 8, cfg.lora_alpha, exported=True)
    with pytest.raises(InputError, match=r"not an exported \.gguf adapter"):
        check_adapter_folder(exported, cfg.lora_r, cfg.lora_alpha)  # a resume wants a checkpoint
    # an exported adapter of other modules is refused by name
    write_lora_gguf({k: v for k, v in pairs.items() if "attn_q" in k}, cfg.lora_alpha,
                    exported / "adapter.gguf", arch="gemma3",
                    metadata={KV_BASE_SHA256: "0" * 64})  # fmt: skip
    with pytest.raises(InputError, match="the adapter has no tensor for"):
        load_adapter_weights(lora_model(_tiny_model(path), cfg), exported)


def test_a_folder_that_is_not_a_lora_checkpoint_is_named(tmp_path: Path) -> None:
    from kbqa.finetune.checkpoint import check_adapter_folder

    folder = tmp_path / "adapter"
    folder.mkdir()
    with pytest.raises(InputError, match=r"no adapter_config\.json: give a checkpoint folder"):
        check_adapter_folder(folder)
    with pytest.raises(InputError, match="is not a folder"):
        check_adapter_folder(tmp_path / "missing")
    (folder / "adapter_config.json").write_text("[]")
    (folder / "adapter_model.safetensors").write_bytes(b"garbage")
    with pytest.raises(InputError, match="is not a JSON object"):
        check_adapter_folder(folder)
    (folder / "adapter_config.json").write_text('{"r": 16, "lora_alpha": 32}')
    with pytest.raises(InputError, match="is not a safetensors file"):
        check_adapter_folder(folder, 16, 32)


def test_a_resumed_schedule_continues_at_its_step_after_a_short_warm_up() -> None:
    from kbqa.finetune.schedule import Schedule

    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=1.0)
    fresh = Schedule("linear", warmup_steps=0, total_steps=100).scheduler(opt)
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0)
    del fresh
    opt = torch.optim.SGD([param], lr=1.0)
    Schedule("linear", warmup_steps=0, total_steps=100, offset=50, restart_warmup=4).scheduler(opt)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5 * 1 / 4)  # step 50 of 100, ramp 1/4


def test_the_manifest_keeps_no_machine_paths() -> None:
    from kbqa.finetune.portable import portable_command, portable_path

    command = ("kbqa finetune reader --train /work/shared/data/bn/train/h.qa.jsonl "
               "--kb=../shared/data/kb.jsonl --out /tmp/x/run --epochs 2")  # fmt: skip
    assert portable_command(command) == (
        "kbqa finetune reader --train h.qa.jsonl --kb=../shared/data/kb.jsonl --out run --epochs 2"
    )
    assert portable_path("/abs/dir/file.gguf") == "file.gguf" and portable_path(3) == 3


def test_max_steps_beyond_the_epochs_reads_on_into_further_epochs(
    tiny: tuple[Path, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    from kbqa.finetune.train import lora_model, train_reader

    path, tok = tiny
    cfg = _cfg(tmp_path, max_steps=5, epochs=1.0)  # 6 examples, 2 a step: 3 steps an epoch
    result = train_reader(lora_model(_tiny_model(path), cfg), tok, _examples(6), [], cfg, tmp_path)
    assert result.steps == 5 and result.examples_seen == 10 and result.finished
    cursor = read_cursor(tmp_path / "checkpoints" / "checkpoint-5")
    assert cursor.total == 10 and cursor.schedule["total_steps"] == 5


def test_the_committed_copy_is_replaced_by_renames_and_never_over_other_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.finetune.checkpoint import check_copy_target, recover_copy

    out, copy = tmp_path / "runs" / "reader", tmp_path / "training" / "reader"
    monkeypatch.chdir(tmp_path)
    check_copy_target(copy, out)  # missing: fine
    bad_targets = [(out, "outside --out"), (out / "x", "outside --out"),
                   (tmp_path / "runs", "outside --out"), (Path("."), "current folder")]  # fmt: skip
    for bad, why in bad_targets:
        with pytest.raises(InputError, match=why):
            check_copy_target(bad, out)
    copy.mkdir(parents=True)
    (copy / "cursor.json").write_text("{}")
    check_copy_target(copy, out)  # a checkpoint's own files: fine
    (copy / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds other files"):
        check_copy_target(copy, out)
    # a save killed between its two renames leaves the old copy aside: it is put back
    (copy / "notes.txt").unlink()
    copy.rename(copy.with_name("reader.old"))
    copy.with_name("reader.tmp").mkdir()
    recover_copy(copy)
    assert (copy / "cursor.json").is_file() and not copy.with_name("reader.tmp").exists()
