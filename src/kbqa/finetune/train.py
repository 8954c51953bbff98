"""LoRA training of the reader with transformers' ``Trainer`` and peft, made cheap on a CPU.

- **Loss on answer tokens only, logits only where the loss needs them**
  (:mod:`kbqa.finetune.loss`).
- **Length-bucketed batches** (``group_by_length``) keep padding small.
- **Checkpoints** every ``save_minutes`` and on Ctrl-C (the first Ctrl-C finishes the step, saves
  and stops; ``--resume`` continues from the last checkpoint with the optimizer state).
- **Progress**: a bar with the loss and the time left (budget or steps, whichever ends first).
"""

from __future__ import annotations

import json
import logging
import math
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from kbqa.finetune.config import LORA_TARGETS, ReaderConfig
from kbqa.finetune.examples import ReaderExample
from kbqa.finetune.loss import LeftPadCollator, answer_loss, encode_example

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger("kbqa.finetune")

PROGRESS_FILE = "progress.json"


def last_checkpoint(out: Path) -> Path | None:
    """The checkpoint with the highest step in ``out/checkpoints`` (``checkpoint-N``), if any;
    other names there are ignored."""
    found = [p for p in (out / "checkpoints").glob("checkpoint-*")
             if p.is_dir() and p.name.split("-", 1)[1].isdigit()]  # fmt: skip
    return max(found, key=lambda p: int(p.name.split("-", 1)[1])) if found else None


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


def _trainer_classes() -> tuple[type, type]:
    """The Trainer subclass and callback, defined on first use (transformers is optional).

    Length: the two classes are defined here so that transformers is imported only when training
    runs.
    """
    from transformers import Trainer, TrainerCallback

    class AnswerOnlyTrainer(Trainer):
        """``Trainer`` whose loss is :func:`answer_loss`."""

        def compute_loss(
            self,
            model: Any,
            inputs: dict[str, Any],
            return_outputs: bool = False,
            num_items_in_batch: Any = None,
        ) -> Any:
            loss = answer_loss(model, inputs, num_items_in_batch)
            return (loss, {}) if return_outputs else loss

    class BudgetCallback(TrainerCallback):
        """Time budget, periodic and Ctrl-C checkpoints, and a progress bar with loss and
        time left. ``elapsed`` carries over from earlier sessions of a resumed run."""

        def __init__(self, cfg: ReaderConfig, out: Path, elapsed: float) -> None:
            self.budget = cfg.budget_seconds
            self.save_every = cfg.save_minutes * 60
            self.out = out
            self.previous = elapsed
            self.started = time.monotonic()
            self.last_save = self.started
            self.interrupted = False
            self.stopped_by_budget = False
            self.bar: Any = None
            self.loss = math.nan
            self.first_step = 0

        def elapsed(self) -> float:
            return self.previous + time.monotonic() - self.started

        def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            from tqdm import tqdm

            self.first_step = state.global_step
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, unit="step",
                            desc="train", dynamic_ncols=True)  # fmt: skip

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if logs and "loss" in logs:
                self.loss = float(logs["loss"])

        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            now = time.monotonic()
            done = state.global_step - self.first_step
            per_step = (now - self.started) / max(done, 1)
            left = (state.max_steps - state.global_step) * per_step
            if self.budget is not None:
                left = min(left, max(0.0, self.budget - self.elapsed()))
            if self.bar is not None:
                self.bar.update(1)
                loss = "-" if math.isnan(self.loss) else f"{self.loss:.3f}"  # none logged yet
                self.bar.set_postfix_str(
                    f"loss {loss}  {per_step:.1f} s/step  left {left / 60:.0f} min"
                )
            if self.budget is not None and self.elapsed() >= self.budget:
                self.stopped_by_budget = True
                control.should_training_stop = True
                control.should_save = True
            if self.interrupted:
                control.should_training_stop = True
                control.should_save = True
            if now - self.last_save >= self.save_every or state.global_step >= state.max_steps:
                control.should_save = True  # periodically, and the final state

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            self.last_save = time.monotonic()
            self.write_progress(state)
            checkpoint = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if checkpoint.is_dir():  # each checkpoint remembers its training time
                self.write_progress(state, checkpoint / PROGRESS_FILE)

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if self.bar is not None:
                self.bar.close()
            self.write_progress(state)

        def write_progress(self, state: Any, path: Path | None = None) -> None:
            (path or self.out / PROGRESS_FILE).write_text(
                json.dumps({"elapsed_seconds": self.elapsed(), "global_step": state.global_step})
            )

    return AnswerOnlyTrainer, BudgetCallback


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
        log_history: transformers' log (loss per logging step).
    """

    steps: int
    train_seconds: float
    seconds_per_step: float
    examples_seen: int
    interrupted: bool
    stopped_by_budget: bool
    eval_loss: float | None
    log_history: list[dict[str, Any]]


def train_reader(
    model: Any,
    tokenizer: PreTrainedTokenizerBase,
    train_examples: Sequence[ReaderExample],
    val_examples: Sequence[ReaderExample],
    cfg: ReaderConfig,
    out: Path,
) -> TrainResult:
    """Train ``model`` (a peft model) on the examples; checkpoints go to ``out/checkpoints``.

    Raises:
        ValueError: No training example fits ``cfg.n_ctx``.

    Length: most of it is the ``TrainingArguments`` list, kept in one place.
    """
    import torch
    from transformers import TrainingArguments

    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(cfg.seed)
    train = [encode_example(tokenizer, e) for e in train_examples]
    train = [f for f in train if len(f["input_ids"]) <= cfg.n_ctx]
    val = [encode_example(tokenizer, e) for e in val_examples]
    val = [f for f in val if len(f["input_ids"]) <= cfg.n_ctx]
    if not train:
        raise ValueError(f"no training example fits n_ctx={cfg.n_ctx}")
    last = last_checkpoint(out)  # an earlier run without --resume is refused by check_inputs
    elapsed = 0.0
    if cfg.resume and last is not None and (last / PROGRESS_FILE).is_file():
        elapsed = float(json.loads((last / PROGRESS_FILE).read_text())["elapsed_seconds"])
    args = TrainingArguments(
        output_dir=str(out / "checkpoints"),
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type=cfg.lr_scheduler,
        warmup_steps=cfg.warmup_steps,
        weight_decay=0.0,
        logging_steps=5,
        save_strategy="no",
        save_total_limit=cfg.keep_checkpoints or None,
        train_sampling_strategy="group_by_length",
        bf16=cfg.bf16,
        use_cpu=True,
        seed=cfg.seed,
        data_seed=cfg.seed,
        report_to=[],
        disable_tqdm=True,
        remove_unused_columns=False,
        prediction_loss_only=True,
        dataloader_num_workers=0,
    )
    trainer_cls, callback_cls = _trainer_classes()
    budget = callback_cls(cfg, out, elapsed)
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=train,
        eval_dataset=val or None,
        data_collator=LeftPadCollator(tokenizer.pad_token_id),
        callbacks=[budget],
    )

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if budget.interrupted:
            raise KeyboardInterrupt
        budget.interrupted = True
        log.warning("Ctrl-C: finishing this step, saving a checkpoint (again to quit at once)")

    previous = signal.signal(signal.SIGINT, on_sigint)
    session_start, first_step = time.monotonic(), 0
    try:
        resume = cfg.resume and last is not None
        first_step = int(last.name.split("-")[-1]) if resume and last else 0
        trainer.train(resume_from_checkpoint=str(last) if resume else None)
    finally:
        signal.signal(signal.SIGINT, previous)
    steps = trainer.state.global_step
    session = time.monotonic() - session_start
    trained = budget.elapsed()  # before the validation pass
    eval_loss = None
    if val and not budget.interrupted:
        eval_loss = float(trainer.evaluate()["eval_loss"])
    return TrainResult(
        steps=steps,
        train_seconds=trained,
        seconds_per_step=session / max(steps - first_step, 1),
        examples_seen=steps * cfg.batch_size * cfg.grad_accum,
        interrupted=budget.interrupted,
        stopped_by_budget=budget.stopped_by_budget,
        eval_loss=eval_loss,
        log_history=list(trainer.state.log_history),
    )


def plot_loss(log_history: Sequence[dict[str, Any]], path: Path) -> None:
    """Training loss per logging step (and the final validation loss) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [h["step"] for h in log_history if "loss" in h]
    losses = [h["loss"] for h in log_history if "loss" in h]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, losses, label="train loss (answer tokens)")
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
