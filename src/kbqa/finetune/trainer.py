"""The reader's ``Trainer`` and its callback (transformers is imported here, so this module is
imported only when training runs; :mod:`kbqa.finetune.train` drives them)."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Any

from transformers import Trainer, TrainerCallback

from kbqa.finetune.checkpoint import Cursor, all_checkpoints, write_checkpoint
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.loss import answer_loss
from kbqa.finetune.schedule import Schedule


class AnswerOnlyTrainer(Trainer):
    """``Trainer`` whose loss is :func:`~kbqa.finetune.loss.answer_loss`, which reads its
    examples in the given order (the seeded :func:`~kbqa.finetune.checkpoint.epoch_order`, from
    the cursor on) and whose schedule, when ``schedule`` is set, continues from the cursor's
    step (without one, the ``TrainingArguments``' own)."""

    schedule: Schedule | None = None

    def compute_loss(
        self,
        model: Any,
        inputs: dict[str, Any],
        return_outputs: bool = False,
        num_items_in_batch: Any = None,
    ) -> Any:
        loss = answer_loss(model, inputs, num_items_in_batch)
        return (loss, {}) if return_outputs else loss

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        if self.schedule is None:
            return super().create_scheduler(num_training_steps, optimizer)
        if self.lr_scheduler is None:
            self.lr_scheduler = self.schedule.scheduler(optimizer or self.optimizer)
        return self.lr_scheduler


class BudgetCallback(TrainerCallback):
    """Time budget, periodic and Ctrl-C checkpoints (:func:`~kbqa.finetune.checkpoint.
    write_checkpoint`), and a progress bar with loss and time left. Steps and times count
    from the start of the run, over every session."""

    def __init__(self, cfg: ReaderConfig, out: Path, cursor: Cursor) -> None:
        self.budget = cfg.budget_seconds
        self.save_every = cfg.save_minutes * 60
        self.keep = cfg.keep_checkpoints
        self.copy_to = Path(cfg.checkpoint_copy) if cfg.checkpoint_copy else None
        self.out = out
        self.cursor = cursor
        self.offset = cursor.step
        self.previous = cursor.elapsed_seconds
        self.started = time.monotonic()
        self.last_save = self.started
        self.interrupted = False
        self.stopped_by_budget = False
        self.bar: Any = None
        self.loss = math.nan
        self.model: Any = None
        self.pending_save = False

    def elapsed(self) -> float:
        return self.previous + time.monotonic() - self.started

    def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        from tqdm import tqdm

        self.model = kw.get("model")
        self.bar = tqdm(
            total=self.offset + state.max_steps,
            initial=self.offset,
            unit="step",
            desc="train",
            dynamic_ncols=True,
        )

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if logs and "loss" in logs:
            self.loss = float(logs["loss"])
            self.cursor.log_history.append(
                {"step": self.offset + state.global_step, "loss": round(self.loss, 4)}
            )
        if self.pending_save:  # deferred from on_step_end so the checkpoint holds this loss
            self.pending_save = False
            self.save(state.global_step)

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        now = time.monotonic()
        per_step = (now - self.started) / max(state.global_step, 1)
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
            self.stopped_by_budget = control.should_training_stop = True
        if self.interrupted:
            control.should_training_stop = True
        due = now - self.last_save >= self.save_every or state.global_step >= state.max_steps
        if due or control.should_training_stop:
            if control.should_log:  # transformers logs this step's loss after this hook
                self.pending_save = True
            else:
                self.save(state.global_step)

    def save(self, session_steps: int) -> None:
        self.cursor.step = self.offset + session_steps
        self.cursor.consumed = self.cursor.step * self.cursor.examples_per_step
        self.cursor.elapsed_seconds = round(self.elapsed(), 1)
        folder = self.out / "checkpoints"
        folder.mkdir(parents=True, exist_ok=True)
        write_checkpoint(self.model, self.cursor, folder, self.copy_to)
        self.last_save = time.monotonic()
        if self.keep:
            for old in all_checkpoints(self.out)[: -self.keep]:
                shutil.rmtree(old, ignore_errors=True)

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.bar is not None:
            self.bar.close()
