"""LoRA training of the reader with transformers' ``Trainer`` and peft, made cheap on a CPU.

- **Loss on answer tokens only, logits only where the loss needs them**
  (:mod:`kbqa.finetune.loss`).
- **A seeded data order with a cursor** (:func:`kbqa.finetune.checkpoint.epoch_order`): every
  epoch is a permutation of the examples, read in order from the cursor on.
- **Checkpoints that travel** (:mod:`kbqa.finetune.checkpoint`): the adapter, the cursor and the
  schedule, under 20 MB, every ``save_minutes``, at the end and on Ctrl-C (the first Ctrl-C
  finishes the step, saves and stops); ``--resume`` or ``--resume-from DIR`` continues on any
  machine, with a short warm-up for the fresh optimizer.
- **Progress**: a bar with the loss and the time left (budget or steps, whichever ends first).
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from kbqa.finetune.checkpoint import (
    Cursor,
    check_resumable,
    epoch_order,
    examples_fingerprint,
    load_adapter_weights,
    read_cursor,
)
from kbqa.finetune.config import LORA_TARGETS, ReaderConfig
from kbqa.finetune.examples import ReaderExample
from kbqa.finetune.loss import LeftPadCollator, encode_example
from kbqa.finetune.schedule import Schedule

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger("kbqa.finetune")


def lora_model(model: PreTrainedModel, cfg: ReaderConfig) -> Any:
    """Wrap ``model`` with a peft LoRA on every attention and MLP projection of the blocks from
    ``cfg.lora_first_layer`` up.

    Raises:
        ValueError: ``lora_first_layer`` is not below the model's block count.
    """
    from peft import LoraConfig, get_peft_model

    blocks = int(model.config.num_hidden_layers)
    if cfg.lora_first_layer >= blocks:
        raise ValueError(f"lora_first_layer {cfg.lora_first_layer} >= the {blocks} blocks")
    config = LoraConfig(
        layers_to_transform=list(range(cfg.lora_first_layer, blocks))
        if cfg.lora_first_layer
        else None,
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(LORA_TARGETS),
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


@dataclass
class TrainResult:
    """What one training session did.

    Attributes:
        steps: Optimizer steps done in total (all sessions).
        train_seconds: Training wall time in total (all sessions).
        seconds_per_step: Mean over this session's steps.
        examples_seen: ``steps x batch_size x grad_accum``.
        interrupted: Stopped by Ctrl-C (a checkpoint was saved; resume with ``--resume``).
        stopped_by_budget: Stopped by the time budget.
        eval_loss: Validation loss at the end (None when interrupted or no validation set).
        log_history: ``[{"step", "loss"}, ...]`` of every session, and the final
            ``{"step", "eval_loss"}``.
        tokens_per_second: Training tokens (prompt and answer) over this session's time.
        finished: The whole order (every epoch) was consumed.
    """

    steps: int
    train_seconds: float
    seconds_per_step: float
    examples_seen: int
    interrupted: bool
    stopped_by_budget: bool
    eval_loss: float | None
    log_history: list[dict[str, Any]]
    tokens_per_second: float = 0.0
    finished: bool = False


def start_cursor(
    cfg: ReaderConfig, train: Sequence[ReaderExample], resume_from: Path | None, model: Any
) -> Cursor:
    """A fresh cursor, or the checkpoint's (its adapter weights loaded into ``model``). A fresh
    cursor starts from ``cfg.init_adapter``'s weights when it is set.

    Raises:
        InputError: See :func:`~kbqa.finetune.checkpoint.read_cursor` and
            :func:`~kbqa.finetune.checkpoint.check_resumable`.
    """
    per_step = cfg.batch_size * cfg.grad_accum
    fingerprint = examples_fingerprint(train)
    if resume_from is not None:
        cursor = read_cursor(resume_from)
        check_resumable(cursor, fingerprint, len(train), per_step, resume_from)
        load_adapter_weights(model, resume_from)
        log.warning("resuming %s at step %d (epoch %.2f)", resume_from, cursor.step, cursor.epoch)
        return cursor
    if cfg.init_adapter:
        load_adapter_weights(model, Path(cfg.init_adapter), role=cfg.ROLE)
        log.warning("starting from the weights of %s (a new run: step 0)", cfg.init_adapter)
    epochs = cfg.epochs  # --max-steps beyond the epochs reads on into further epochs
    if cfg.max_steps > 0:
        epochs = max(epochs, cfg.max_steps * per_step / len(train))
    total = len(epoch_order(len(train), epochs, cfg.seed))
    schedule = {
        "name": cfg.lr_scheduler,
        "learning_rate": cfg.learning_rate,
        "warmup_steps": cfg.warmup_steps,
        "total_steps": total // per_step,
    }
    return Cursor(
        step=0,
        consumed=0,
        total=total,
        examples_per_step=per_step,
        train_examples=len(train),
        fingerprint=fingerprint,
        seed=cfg.seed,
        epochs=epochs,
        schedule=schedule,
        base_model=Path(cfg.base_model).name,
    )


def train_reader(
    model: Any,
    tokenizer: PreTrainedTokenizerBase,
    train_examples: Sequence[ReaderExample],
    val_examples: Sequence[ReaderExample],
    cfg: ReaderConfig,
    out: Path,
    resume_from: Path | None = None,
) -> TrainResult:
    """Train ``model`` (a peft model) on the examples in their seeded epoch order, from the
    start or from ``resume_from``; checkpoints go to ``out/checkpoints`` (and to
    ``cfg.checkpoint_copy``).

    Raises:
        ValueError: A training example does not fit ``cfg.n_ctx``.
        InputError: ``resume_from`` cannot be resumed with these examples and settings.
    """
    import torch

    from kbqa.finetune.trainer import AnswerOnlyTrainer, BudgetCallback

    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    encoded, val = _encode(tokenizer, train_examples, val_examples, cfg.n_ctx)
    cursor = start_cursor(cfg, train_examples, resume_from, model)
    order = epoch_order(cursor.train_examples, cursor.epochs, cursor.seed)
    per_step = cursor.examples_per_step
    steps = (len(order) - cursor.consumed) // per_step
    if cfg.max_steps > 0:
        steps = min(steps, cfg.max_steps - cursor.step)
    if steps <= 0:  # a finished run resumed (to export it again), or --max-steps reached
        log.warning(
            "nothing left to train at step %d of %d: the checkpoint's weights are kept",
            cursor.step,
            len(order) // per_step,
        )
        return _nothing_trained(cursor, len(order))
    session = [encoded[i] for i in order[cursor.consumed : cursor.consumed + steps * per_step]]
    budget = BudgetCallback(cfg, out, cursor)
    trainer = AnswerOnlyTrainer(
        model=model,
        args=_training_arguments(cfg, cursor, out, steps),
        train_dataset=session,
        eval_dataset=val or None,
        data_collator=LeftPadCollator(tokenizer.pad_token_id),
        callbacks=[budget],
    )
    trainer.schedule = Schedule(
        cursor.schedule["name"],
        cursor.schedule["warmup_steps"],
        cursor.schedule["total_steps"],
        cursor.step,
        cfg.restart_warmup_steps,
    )
    first_step, session_start = cursor.step, time.monotonic()
    with _first_sigint_stops(budget):
        trainer.train()
    done = cursor.step - first_step
    seconds = time.monotonic() - session_start
    tokens = sum(len(f["input_ids"]) for f in session[: done * per_step])
    eval_loss = None
    if val and not budget.interrupted:
        eval_loss = float(trainer.evaluate()["eval_loss"])
    history = [*cursor.log_history]
    if eval_loss is not None:
        history.append({"step": cursor.step, "eval_loss": eval_loss})
    return TrainResult(
        steps=cursor.step,
        train_seconds=cursor.elapsed_seconds,
        seconds_per_step=seconds / max(done, 1),
        examples_seen=cursor.consumed,
        interrupted=budget.interrupted,
        stopped_by_budget=budget.stopped_by_budget,
        eval_loss=eval_loss,
        log_history=history,
        tokens_per_second=tokens / seconds if seconds else 0.0,
        finished=cursor.consumed + per_step > len(order),
    )


def _encode(
    tokenizer: PreTrainedTokenizerBase,
    train_examples: Sequence[ReaderExample],
    val_examples: Sequence[ReaderExample],
    n_ctx: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The examples encoded (:func:`~kbqa.finetune.loss.encode_example`); validation examples
    longer than ``n_ctx`` tokens are left out.

    Raises:
        ValueError: A training example is longer than ``n_ctx`` tokens.
    """
    encoded = [encode_example(tokenizer, e) for e in train_examples]
    if too_long := [
        e.qid for e, f in zip(train_examples, encoded, strict=True) if len(f["input_ids"]) > n_ctx
    ]:
        raise ValueError(f"{len(too_long)} training examples exceed n_ctx={n_ctx}: {too_long[:3]}")
    val = [encode_example(tokenizer, e) for e in val_examples]
    return encoded, [f for f in val if len(f["input_ids"]) <= n_ctx]


def _nothing_trained(cursor: Cursor, order_length: int) -> TrainResult:
    """The result of a session with no step left: the checkpoint's, unchanged."""
    return TrainResult(
        steps=cursor.step,
        train_seconds=cursor.elapsed_seconds,
        seconds_per_step=cursor.elapsed_seconds / max(cursor.step, 1),
        examples_seen=cursor.consumed,
        interrupted=False,
        stopped_by_budget=False,
        eval_loss=None,
        log_history=[*cursor.log_history],
        finished=cursor.consumed + cursor.examples_per_step > order_length,
    )


def _training_arguments(cfg: ReaderConfig, cursor: Cursor, out: Path, steps: int) -> Any:
    """transformers' ``TrainingArguments`` for a session of ``steps`` optimizer steps: on the
    CPU, the data in the given order, no checkpoint of the Trainer's own (the callback saves)."""
    from transformers import TrainingArguments

    return TrainingArguments(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        max_steps=steps,
        learning_rate=cursor.schedule["learning_rate"],
        weight_decay=0.0,
        logging_steps=LOGGING_STEPS if steps >= 10 * LOGGING_STEPS else 1,  # a curve for any run
        save_strategy="no",
        train_sampling_strategy="sequential",  # the order is epoch_order's, from the cursor
        bf16=cfg.bf16,
        use_cpu=True,
        seed=cfg.seed,
        report_to=[],
        disable_tqdm=True,
        remove_unused_columns=False,
        prediction_loss_only=True,
        dataloader_num_workers=0,
    )


@contextmanager
def _first_sigint_stops(budget: Any) -> Iterator[None]:
    """Within the block, the first Ctrl-C asks ``budget`` (a
    :class:`~kbqa.finetune.trainer.BudgetCallback`) to finish the step, save and stop; a second
    raises ``KeyboardInterrupt``. The previous handler is restored on leaving."""

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if budget.interrupted:
            raise KeyboardInterrupt
        budget.interrupted = True
        log.warning("Ctrl-C: finishing this step, saving a checkpoint (again to quit at once)")

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


LOGGING_STEPS = 5
"""Optimizer steps between logged losses; a run shorter than ten of them logs every step, so
its loss curve has a point per step."""


def plot_loss(log_history: Sequence[dict[str, Any]], path: Path) -> None:
    """Training loss per logging step (and the final validation loss) as a PNG; a run with few
    points draws them as markers, and one with no logged step its mean loss at its last step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in log_history if "loss" in h]
    losses = [h["loss"] for h in log_history if "loss" in h]
    if not steps:  # only the trainer's summary: the run's mean loss
        steps = [h["step"] for h in log_history if "train_loss" in h][-1:]
        losses = [h["train_loss"] for h in log_history if "train_loss" in h][-1:]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(
        steps, losses, marker="o" if len(steps) <= 20 else None, label="train loss (answer tokens)"
    )
    evals = [(h["step"], h["eval_loss"]) for h in log_history if "eval_loss" in h]
    if evals:
        ax.scatter(*zip(*evals, strict=True), color="C1", label="validation loss", zorder=3)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("cross-entropy")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
