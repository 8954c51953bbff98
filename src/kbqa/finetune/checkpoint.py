"""Resumable training checkpoints that fit in a repository and survive a change of machine.

A checkpoint is a directory ``checkpoint-N`` (``N``: optimizer steps done) holding:

- ``adapter_model.safetensors`` and ``adapter_config.json``: the LoRA adapter as peft writes it
  (float32; 15 MB at r 16 on every projection of Gemma 3 270M's 18 blocks), which
  ``kbqa finetune export`` turns into a llama.cpp adapter;
- ``cursor.json``: where training stands: the step, the examples consumed in the seeded data
  order (:func:`epoch_order`), a fingerprint of the training examples that order indexes, the
  learning-rate schedule and the loss history;
- ``progress.json``: training seconds so far.

The optimizer state (AdamW's two moments, twice the adapter's size) is not kept, so a checkpoint
stays under 20 MB. A resumed run restarts the optimizer warm: a short linear warm-up
(``restart_warmup_steps``) on top of the schedule's value at the step it resumes from, as
"warm restarts" do (Loshchilov & Hutter, 2017, SGDR).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import typing
from collections.abc import Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kbqa.errors import InputError
from kbqa.finetune.examples import ReaderExample

CURSOR_FILE = "cursor.json"
PROGRESS_FILE = "progress.json"
ADAPTER_FILE = "adapter_model.safetensors"
CURSOR_FORMAT = 1


def epoch_order(n: int, epochs: float, seed: int) -> list[int]:
    """The order in which training reads ``n`` examples over ``epochs`` passes.

    Epoch ``e`` is a permutation of ``range(n)`` seeded by ``(seed, e)`` (a string seed, which
    Python's ``random`` hashes the same way on every machine); a fractional last epoch is the
    start of its permutation. So no example is seen twice within an epoch, and a cursor into this
    list names the same examples on any clone.

    Returns:
        Indices into the training examples, ``floor(n * epochs)`` of them.

    Raises:
        ValueError: ``n`` < 1 or ``epochs`` not positive.
    """
    if n < 1 or not epochs > 0:
        raise ValueError(f"need n >= 1 and epochs > 0, got n={n}, epochs={epochs}")
    total = math.floor(n * epochs + 1e-9)  # n * (k / n) is k, not k - 1
    order: list[int] = []
    epoch = 0
    while len(order) < total:
        perm = list(range(n))
        random.Random(f"kbqa-epoch:{seed}:{epoch}").shuffle(perm)
        order.extend(perm[: total - len(order)])
        epoch += 1
    return order


def examples_fingerprint(examples: Sequence[ReaderExample]) -> str:
    """sha256 of the training examples' ids, kinds, questions and targets, in order: a resumed run
    checks that its cursor indexes the same examples."""
    digest = hashlib.sha256()
    for ex in examples:
        digest.update(f"{ex.qid}\t{ex.kind}\t{ex.question}\t{ex.target}\n".encode())
    return digest.hexdigest()


@dataclass
class Cursor:
    """Where a run stands (``cursor.json``).

    Attributes:
        step: Optimizer steps done.
        consumed: Examples of :func:`epoch_order` consumed (``step * examples_per_step``).
        total: Length of the whole order (every epoch).
        examples_per_step: ``batch_size * grad_accum``.
        train_examples: How many training examples the order indexes.
        fingerprint: :func:`examples_fingerprint` of them.
        seed: The order's seed.
        epochs: Passes over the examples.
        schedule: ``{"name", "learning_rate", "warmup_steps", "total_steps"}``.
        base_model: The base model's registered name (or GGUF file name).
        elapsed_seconds: Training wall time so far, all sessions.
        log_history: ``[{"step", "loss"}, ...]`` of every session.
        format: The file's format version.
    """

    step: int
    consumed: int
    total: int
    examples_per_step: int
    train_examples: int
    fingerprint: str
    seed: int
    epochs: float
    schedule: dict[str, Any]
    base_model: str = ""
    elapsed_seconds: float = 0.0
    log_history: list[dict[str, Any]] = field(default_factory=list)
    format: int = CURSOR_FORMAT

    @property
    def epoch(self) -> float:
        """Epochs done (consumed examples over the training examples)."""
        return self.consumed / self.train_examples if self.train_examples else 0.0


def read_cursor(checkpoint: Path) -> Cursor:
    """The cursor of a checkpoint directory.

    Raises:
        InputError: No such directory, no ``cursor.json`` (a checkpoint of an older kbqa, which
            cannot be resumed on another machine), or one that is not a cursor.
    """
    path = checkpoint / CURSOR_FILE
    if not checkpoint.is_dir():
        raise InputError(f"checkpoint {checkpoint} is not a directory")
    if not path.is_file():
        raise InputError(
            f"{checkpoint} has no {CURSOR_FILE}: it is not a resumable checkpoint (an older "
            "kbqa's, or not a checkpoint); start the run again with another --out"
        )
    try:
        data = json.loads(path.read_text("utf-8"))
    except ValueError as exc:
        raise InputError(f"{path} is not a training cursor: {exc}") from None
    wanted = {f.name for f in fields(Cursor)}
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a training cursor: not a JSON object")
    if missing := sorted(
        f.name
        for f in fields(Cursor)
        if f.default is MISSING and f.default_factory is MISSING and f.name not in data
    ):
        raise InputError(f"{path} is not a training cursor: it lacks {', '.join(missing)}")
    if data.get("format", CURSOR_FORMAT) != CURSOR_FORMAT:
        raise InputError(f"{path} has format {data['format']!r}, this kbqa reads {CURSOR_FORMAT}")
    for name, hint in typing.get_type_hints(Cursor).items():
        value, kinds = data.get(name), _json_types(hint)
        if name in data and (isinstance(value, bool) or not isinstance(value, kinds)):
            raise InputError(
                f"{path} is not a training cursor: {name} is {value!r}, not "
                f"{' or '.join(k.__name__ for k in kinds)}"
            )
    cursor = Cursor(**{k: v for k, v in data.items() if k in wanted})
    check_adapter_folder(checkpoint)
    return cursor


def _json_types(hint: Any) -> tuple[type, ...]:
    """The JSON value types a field annotated ``hint`` accepts (a float also as a whole number)."""
    origin = typing.get_origin(hint) or hint
    return (int, float) if origin is float else (origin,)


def check_resumable(cursor: Cursor, fingerprint: str, n: int, per_step: int, where: Path) -> None:
    """Refuse to resume a cursor over other examples or another batch shape.

    Raises:
        InputError: The examples or ``batch_size * grad_accum`` differ from the checkpoint's.
    """
    if cursor.fingerprint != fingerprint or cursor.train_examples != n:
        raise InputError(
            f"{where} was trained on other examples ({cursor.train_examples} with fingerprint "
            f"{cursor.fingerprint[:12]}, now {n} with {fingerprint[:12]}): resume with the same "
            "training files and data settings (its cursor.json and the adapter manifest name them)"
        )
    if cursor.examples_per_step != per_step:
        raise InputError(
            f"{where} took {cursor.examples_per_step} examples a step, these settings take "
            f"{per_step}: keep --batch-size x --grad-accum the same to resume"
        )


CHECKPOINT_FILES = frozenset({CURSOR_FILE, PROGRESS_FILE, ADAPTER_FILE, "adapter_config.json"})
"""What a checkpoint directory holds; a ``--checkpoint-copy`` folder may hold nothing else."""


def check_copy_target(copy_to: Path, out: Path) -> None:
    """Refuse a ``--checkpoint-copy`` folder that replacing would destroy other files: the
    current folder or a parent of it, ``--out`` or a folder inside or around it, or a folder
    holding anything but a checkpoint.

    Raises:
        InputError: Naming the folder and why.
    """
    target, run, here = copy_to.resolve(), out.resolve(), Path.cwd().resolve()
    if target == here or target in here.parents:
        raise InputError(f"--checkpoint-copy {copy_to} is the current folder or one above it")
    if target == run or run in target.parents or target in run.parents:
        raise InputError(f"--checkpoint-copy {copy_to} must lie outside --out {out}")
    if target.exists() and not target.is_dir():
        raise InputError(f"--checkpoint-copy {copy_to} is a file, not a folder")
    if target.is_dir() and (
        other := sorted(p.name for p in target.iterdir() if p.name not in CHECKPOINT_FILES)
    ):
        raise InputError(
            f"--checkpoint-copy {copy_to} holds other files ({', '.join(other[:3])}): each save "
            "replaces the folder, so give an empty one or one holding only a checkpoint"
        )


def write_checkpoint(model: Any, cursor: Cursor, folder: Path, copy_to: Path | None = None) -> Path:
    """Write ``folder/checkpoint-{cursor.step}`` atomically (a temporary directory renamed into
    place); with ``copy_to``, also replace that directory with a copy of it (the copy to
    commit), by renames, so that a kill at any moment leaves either the old copy or the new one
    (or, between two renames, the old one at ``copy_to.old``, which :func:`recover_copy` puts
    back).

    Args:
        model: The peft model (``save_pretrained`` writes only the adapter; its config names the
            base by its registered name, not by a path on this machine).
        cursor: Its position.
        folder: The run's checkpoints directory.
        copy_to: A directory that holds only the newest checkpoint, e.g. ``training/reader``
            (checked by :func:`check_copy_target`).

    Returns:
        The checkpoint directory.
    """
    target = folder / f"checkpoint-{cursor.step}"
    tmp = folder / f".checkpoint-{cursor.step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    (tmp / "README.md").unlink(missing_ok=True)  # peft's model card template
    config_path = tmp / "adapter_config.json"
    config = json.loads(config_path.read_text("utf-8"))
    config["base_model_name_or_path"] = cursor.base_model  # peft writes the cache path here
    config_path.write_text(json.dumps(config, indent=2), "utf-8")
    (tmp / CURSOR_FILE).write_text(json.dumps(asdict(cursor), indent=1), "utf-8")
    progress = {"elapsed_seconds": cursor.elapsed_seconds, "global_step": cursor.step}
    (tmp / PROGRESS_FILE).write_text(json.dumps(progress), "utf-8")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    if copy_to is not None:
        recover_copy(copy_to)
        staged, old = _aside(copy_to, ".tmp"), _aside(copy_to, ".old")
        shutil.rmtree(staged, ignore_errors=True)
        shutil.copytree(target, staged)
        if copy_to.exists():
            copy_to.rename(old)
        staged.rename(copy_to)
        shutil.rmtree(old, ignore_errors=True)
    return target


def _aside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def recover_copy(copy_to: Path) -> None:
    """Put back a copy left at ``copy_to.old`` by a kill between two renames of
    :func:`write_checkpoint`, and drop a half-written ``copy_to.tmp``."""
    old = _aside(copy_to, ".old")
    if old.is_dir() and not copy_to.exists():
        old.rename(copy_to)
    shutil.rmtree(_aside(copy_to, ".tmp"), ignore_errors=True)


def check_adapter_folder(
    folder: Path,
    r: int | None = None,
    alpha: int | None = None,
    *,
    exported: bool = False,
    role: str = "reader",
) -> None:
    """Check that ``folder`` holds a peft LoRA adapter (``adapter_config.json`` and
    :data:`ADAPTER_FILE`) as a checkpoint does, of LoRA rank ``r`` and ``alpha`` when given.
    With ``exported``, an exported adapter GGUF (a ``.gguf`` file, or a folder holding
    ``adapter.gguf`` as the shipped reader's does) is accepted too, so a run can start from it
    (``--init-adapter``) when its manifest's role fits ``role``, the run's.

    Raises:
        InputError: It is not a folder, lacks one of the two files, its config is not a JSON
            object or names another rank or alpha, or its weights file is not safetensors; an
            exported adapter that is not a readable LoRA GGUF, or of another rank or alpha.
    """
    from kbqa.finetune.import_adapter import exported_adapter_file, read_exported

    gguf_file = exported_adapter_file(folder) if exported else None
    if gguf_file is not None:
        read_exported(folder, gguf_file, r, alpha, role)
        return
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder (a LoRA checkpoint folder was expected)")
    for name in ("adapter_config.json", ADAPTER_FILE):
        if not (folder / name).is_file():
            raise InputError(
                f"{folder} has no {name}: give a checkpoint folder (training/reader, "
                "OUT/checkpoints/checkpoint-N), not an exported .gguf adapter"
            )
    config = _adapter_config(folder)
    for key, mine in (("r", r), ("lora_alpha", alpha)):
        if mine is not None and config.get(key) != mine:
            raise InputError(
                f"{folder} has LoRA {key} {config.get(key)!r}, these settings {mine!r}"
            )
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(folder / ADAPTER_FILE), framework="pt") as weights:
            if not list(weights.keys()):
                raise InputError(f"{folder / ADAPTER_FILE} holds no tensor")
    except SafetensorError as e:
        raise InputError(f"{folder / ADAPTER_FILE} is not a safetensors file: {e}") from e


def _adapter_config(folder: Path) -> dict[str, Any]:
    """``folder/adapter_config.json``.

    Raises:
        InputError: It is not a JSON object.
    """
    try:
        config = json.loads((folder / "adapter_config.json").read_text("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{folder}/adapter_config.json is not JSON: {e}") from e
    if not isinstance(config, dict):
        raise InputError(f"{folder}/adapter_config.json is not a JSON object")
    return config


def load_adapter_weights(model: Any, checkpoint: Path, *, role: str = "reader") -> None:
    """Load a checkpoint's LoRA weights into ``model`` (a peft model of the same LoRA shape).

    Raises:
        InputError: The checkpoint's LoRA rank, alpha or tensors do not fit the model (another
            base model, other target modules, unreadable weights).
    """
    from peft import set_peft_model_state_dict

    from kbqa.finetune.import_adapter import exported_weights

    ours = model.peft_config["default"]
    weights = exported_weights(model, checkpoint, role)
    if weights is None:
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        config = _adapter_config(checkpoint)
        for key, mine in (("r", ours.r), ("lora_alpha", ours.lora_alpha)):
            if config.get(key) != mine:
                raise InputError(
                    f"{checkpoint} has LoRA {key} {config.get(key)!r}, these settings {mine!r}"
                )
        try:
            weights = load_file(str(checkpoint / ADAPTER_FILE))
        except SafetensorError as e:
            raise InputError(f"{checkpoint / ADAPTER_FILE} is not a safetensors file: {e}") from e
    try:
        result = set_peft_model_state_dict(model, weights)
    except RuntimeError as e:  # torch's "size mismatch": an adapter of another base model
        first = str(e).strip().splitlines()[-1].strip()
        raise InputError(
            f"{checkpoint} does not fit this base model (an adapter of another model?): {first}"
        ) from e
    unexpected = list(getattr(result, "unexpected_keys", []) or [])
    if unexpected:
        raise InputError(f"{checkpoint} holds tensors this model lacks: {unexpected[:3]}")
    missing = [k for k in getattr(result, "missing_keys", []) or [] if "lora_" in k]
    if missing:
        raise InputError(
            f"{checkpoint} lacks {len(missing)} of this model's LoRA tensors ({missing[0]}, "
            "...): it adapts other modules (lora target modules) than these settings"
        )


def all_checkpoints(out: Path) -> list[Path]:
    """The ``checkpoint-N`` directories of ``out/checkpoints`` by step (other names ignored)."""
    found = [
        p
        for p in (out / "checkpoints").glob("checkpoint-*")
        if p.is_dir() and p.name.split("-", 1)[1].isdigit()
    ]
    return sorted(found, key=lambda p: int(p.name.split("-", 1)[1]))


def last_checkpoint(out: Path) -> Path | None:
    """The checkpoint with the highest step in ``out/checkpoints``, if any."""
    found = all_checkpoints(out)
    return found[-1] if found else None
