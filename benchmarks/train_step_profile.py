"""Where a training step's time goes, and what each speed-up buys: seconds per example, training
tokens per second and the share of the bound set by the model's compute, for the served window
against shorter ones, LoRA on every block against the upper blocks only, and float32 against
bfloat16 autocast. Prints a table (medians over ``--n`` examples) and torch.profiler's top
operators for the first variant; asserts nothing.

    python benchmarks/train_step_profile.py --train ../shared/data/bn/train/haque2020.qa.jsonl \\
        --kb ../shared/data/bn/train/haque2020_kb.jsonl --out /tmp/kbqa-profile --n 12

The bound: a training step costs about 6 FLOPs per parameter per token it backpropagates through
(2 forward, 4 backward; Kaplan et al. 2020), counted on the non-embedding parameters (the
embedding is a table look-up; the output layer runs only at the answer positions). The CPU's peak
is measured here with a float32 matrix product. Run it on otherwise idle cores.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kbqa.finetune.base import load_base
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.loss import LeftPadCollator, answer_loss, encode_example
from kbqa.finetune.pipeline import ensure_index
from kbqa.finetune.reader import prepare_examples
from kbqa.finetune.train import lora_model
from kbqa.llm.models import MODELS, resolve_model


def peak_gflops(threads: int) -> float:
    """float32 GFLOP/s of a 1024x1024 matrix product on ``threads`` threads (best of 5)."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    best = min(_timed(lambda: a @ b) for _ in range(5))
    return 2 * 1024**3 / best / 1e9


def _timed(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def step_seconds(model: Any, tok: Any, examples: list[Any], bf16: bool) -> list[float]:
    """Seconds of forward + backward for each example (batch 1), after one warm-up."""
    import torch

    collate = LeftPadCollator(tok.pad_token_id)
    times = []
    for i, ex in enumerate(examples):
        batch = collate([encode_example(tok, ex)])
        t = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = answer_loss(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)
        if i:
            times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--train", required=True)
    ap.add_argument("--kb", required=True)
    ap.add_argument("--out", default="/tmp/kbqa-profile")
    ap.add_argument("--questions", type=int, default=150, help="questions to build examples of")
    ap.add_argument("--n", type=int, default=12, help="examples timed per variant")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--profile", action="store_true", help="torch.profiler's top operators")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    gguf = resolve_model("gemma3-270m")[0]
    base_cfg = ReaderConfig(train=args.train, kb=args.kb, out=args.out,
                            max_questions=args.questions, paraphrase_share=0.0)  # fmt: skip
    model, tok = load_base(gguf, sha256=MODELS["gemma3-270m"].sha256)
    index = ensure_index(base_cfg, Path(args.out))
    windows = {}
    for name, cfg in (("served (k 3 + padding)", replace(base_cfg, train_k=0)),
                      ("short (k 2, no padding)", replace(base_cfg, served_share=0.0))):  # fmt: skip
        out = Path(args.out) / name.split()[0]
        out.mkdir(parents=True, exist_ok=True)
        examples, _ = prepare_examples(cfg, out, tok, index)
        windows[name] = [e for e in examples if e.split == "train"][: args.n + 1]
    params = sum(p.numel() for n, p in model.named_parameters() if "embed" not in n)
    blocks = int(model.config.num_hidden_layers)
    gflops = peak_gflops(args.threads)
    print(f"non-embedding parameters {params / 1e6:.1f}M; float32 matmul peak {gflops:.0f} GFLOP/s "
          f"on {args.threads} threads")  # fmt: skip
    print("| window | LoRA blocks | dtype | tokens/example | s/example | tokens/s | bound tokens/s"
          " | share of bound |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    variants = [("served (k 3 + padding)", 0, False), ("short (k 2, no padding)", 0, False),
                ("short (k 2, no padding)", blocks // 2, False),
                ("short (k 2, no padding)", 0, True)]  # fmt: skip
    for window, first, bf16 in variants:
        fresh, _ = load_base(gguf, sha256=MODELS["gemma3-270m"].sha256)
        peft = lora_model(fresh, replace(base_cfg, lora_first_layer=first)).train()
        examples = windows[window]
        secs = statistics.median(step_seconds(peft, tok, examples, bf16))
        tokens = statistics.median(len(encode_example(tok, e)["input_ids"]) for e in examples)
        # forward through every block (2 FLOPs), backward through the adapted ones (4)
        flops_per_token = params * (2 + 4 * (blocks - first) / blocks)
        bound = gflops * 1e9 / flops_per_token
        print(f"| {window} | {first}-{blocks - 1} | {'bf16 autocast' if bf16 else 'float32'} | "
              f"{tokens:.0f} | {secs:.2f} | {tokens / secs:.0f} | {bound:.0f} | "
              f"{tokens / secs / bound:.0%} |")  # fmt: skip
    if args.profile:
        from torch.profiler import ProfilerActivity, profile

        fresh, _ = load_base(gguf, sha256=MODELS["gemma3-270m"].sha256)
        peft = lora_model(fresh, base_cfg).train()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step_seconds(peft, tok, windows["short (k 2, no padding)"][:4], False)
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15))


if __name__ == "__main__":
    main()
