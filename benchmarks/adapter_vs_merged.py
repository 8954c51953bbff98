"""Serving a trained reader two ways: the base GGUF with the LoRA adapter applied by llama.cpp at
load time, or one merged GGUF (``W + (alpha / r) B A`` folded into each adapted weight, stored as
Q8_0 or F32; the other tensors stay Q4_K_M). Same validation examples, llama.cpp, greedy.
Prints F1, median seconds per example and file sizes; asserts nothing.

    python benchmarks/adapter_vs_merged.py --run runs/finetune-reader --n 200
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from safetensors.torch import load_file

from kbqa.finetune.evaluate import load_reader, score_reader
from kbqa.finetune.examples import read_examples
from kbqa.finetune.export import export_checkpoint, lora_tensor_pairs, write_merged_gguf
from kbqa.llm.models import resolve_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--run", required=True, help="a kbqa finetune reader output directory")
    ap.add_argument("--checkpoint", help="checkpoint to merge (default: the last one)")
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    run = Path(args.run)
    checkpoint = (
        Path(args.checkpoint)
        if args.checkpoint
        else max(
            (run / "checkpoints").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1])
        )
    )
    examples = [e for e in read_examples(run / "examples.jsonl") if e.split == "val"]
    val = random.Random(0).sample(examples, min(args.n, len(examples)))
    base = resolve_model("gemma3-270m")[0]
    lora = json.loads((checkpoint / "adapter_config.json").read_text())
    pairs = lora_tensor_pairs(
        load_file(str(checkpoint / "adapter_model.safetensors")), "gemma3", 18
    )
    # the runtime form serves the same checkpoint as the merged ones
    adapter = export_checkpoint(checkpoint, run / "exports" / checkpoint.name)
    print("| serving | file MiB | val F1 | median s/example |")
    print("|---|---|---|---|")
    forms = [("base + LoRA adapter (runtime)", base, adapter)]
    for qtype in ("Q8_0", "F32"):
        merged = run / "exports" / f"merged-{checkpoint.name}-{qtype.lower()}.gguf"
        if not merged.is_file():
            write_merged_gguf(base, pairs, lora["lora_alpha"], merged, qtype=qtype)
        forms.append((f"merged ({qtype} adapted weights)", merged, None))
    for name, gguf, lora_path in forms:
        scores = score_reader(load_reader(gguf, lora_path), val)
        size = (gguf.stat().st_size + (lora_path.stat().st_size if lora_path else 0)) / 2**20
        print(f"| {name} | {size:.0f} | {scores.f1:.3f} | {scores.seconds_per_example:.2f} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
