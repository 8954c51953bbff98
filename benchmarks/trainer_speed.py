"""Seconds per training example on the CPU: TRL's SFTTrainer (prompt-completion data,
``completion_only_loss``) against kbqa's Trainer subclass (the same loss, logits only at the
answer positions), on the same real examples and LoRA. Prints medians; asserts nothing.

    python benchmarks/trainer_speed.py --examples runs/finetune-reader/examples.jsonl --steps 8

Run it on an otherwise idle machine: it reports wall time. Needs TRL (``pip install trl``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from kbqa.finetune.base import load_base
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.examples import read_examples
from kbqa.finetune.train import lora_model
from kbqa.llm.models import MODELS, resolve_model


class StepTimer:
    """A TrainerCallback-like object recording each step's wall time."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self._t = 0.0

    def hooks(self) -> Any:
        from transformers import TrainerCallback

        timer = self

        class Hook(TrainerCallback):  # type: ignore[misc]
            def on_step_begin(self, *a: Any, **k: Any) -> None:
                timer._t = time.perf_counter()

            def on_step_end(self, *a: Any, **k: Any) -> None:
                timer.times.append(time.perf_counter() - timer._t)

        return Hook()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--out", default="/tmp/kbqa-trainer-speed")
    args = ap.parse_args()
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from kbqa.finetune.loss import LeftPadCollator, encode_example
    from kbqa.finetune.trainer import AnswerOnlyTrainer

    examples = [e for e in read_examples(Path(args.examples)) if e.split == "train"][: args.steps]
    gguf = resolve_model("gemma3-270m")[0]
    rows = []
    for name in (
        "kbqa Trainer (logits at answer positions)",
        "TRL SFTTrainer (completion_only_loss)",
    ):
        model, tok = load_base(gguf, sha256=MODELS["gemma3-270m"].sha256)
        model = lora_model(model, ReaderConfig(train="t", kb="k"))
        timer = StepTimer()
        common = dict(output_dir=args.out, per_device_train_batch_size=1, max_steps=args.steps,
                      learning_rate=2e-4, use_cpu=True, report_to=[], save_strategy="no",
                      logging_steps=1000, disable_tqdm=True)  # fmt: skip
        if name.startswith("TRL"):
            data = Dataset.from_list(
                [
                    {"prompt": e.prompt, "completion": " " + e.target + tok.eos_token}
                    for e in examples
                ]
            )
            cfg = SFTConfig(**common, completion_only_loss=True, max_length=8192)
            trainer: Any = SFTTrainer(model=model, args=cfg, train_dataset=data,
                                      processing_class=tok, callbacks=[timer.hooks()])  # fmt: skip
        else:
            from transformers import TrainingArguments

            trainer = AnswerOnlyTrainer(model=model, args=TrainingArguments(**common, remove_unused_columns=False),
                          train_dataset=[encode_example(tok, e) for e in examples],
                          data_collator=LeftPadCollator(tok.pad_token_id),
                          callbacks=[timer.hooks()])  # fmt: skip
        trainer.train()
        rows.append((name, statistics.median(timer.times[1:])))
    base = rows[0][1]
    print("| trainer | median s/example | ratio |")
    print("|---|---|---|")
    for name, sec in rows:
        print(f"| {name} | {sec:.2f} | {sec / base:.2f}x |")


if __name__ == "__main__":
    main()
