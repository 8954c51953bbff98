"""The abstention threshold's trade-off for a tuned reader, on the validation examples of a
`kbqa finetune reader` run (held-out documents of the training set; `abstain` examples count
as unanswerable). Prints F1 and abstention rates per threshold; asserts nothing.

    python benchmarks/abstention_curve.py --run runs/finetune-reader --adapter runs/finetune-reader/adapter
    python benchmarks/abstention_curve.py --run RUN --adapter RUN/adapter --language en --n 300

At threshold t the reader abstains exactly when its probability of the abstention phrase's
first token is at least t (``--abstention-threshold``; 0 is plain greedy decoding, shown
first for reference), and the threshold :func:`kbqa.finetune.evaluate.choose_threshold` picks.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from kbqa.errors import KBQAError
from kbqa.finetune.evaluate import (
    THRESHOLDS,
    abstention_curve,
    choose_threshold,
    load_reader,
    score_reader,
)
from kbqa.finetune.examples import read_examples
from kbqa.llm.lora import ADAPTER_FILE
from kbqa.llm.models import resolve_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--run", required=True, help="a kbqa finetune reader output directory")
    ap.add_argument("--adapter", required=True, help="adapter directory (or .gguf) to score")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1, help="sample seed (training scored seed 0)")
    ap.add_argument("--language", default="", help="only the examples of this language (bn, en)")
    args = ap.parse_args()
    if args.n < 1:
        raise SystemExit(f"error: --n must be at least 1, got {args.n}")
    adapter = Path(args.adapter)
    adapter = adapter / ADAPTER_FILE if adapter.is_dir() else adapter
    if not adapter.is_file():  # llama.cpp would crash on a missing file
        raise SystemExit(f"error: no adapter at {adapter} (a directory with {ADAPTER_FILE}, or "
                         "a .gguf)")  # fmt: skip
    source = Path(args.run) / "examples.jsonl"
    if not source.is_file():
        raise SystemExit(f"error: {source} does not exist: --run takes a kbqa finetune reader "
                         "output directory")  # fmt: skip
    try:
        examples = [e for e in read_examples(source) if e.split == "val"]
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.language:
        examples = [e for e in examples if e.language == args.language]
        if not examples:
            raise SystemExit(f"error: {args.run} has no validation example in {args.language!r}")
    if not examples:
        raise SystemExit(f"error: {source} holds no validation example")
    val = random.Random(args.seed).sample(examples, min(args.n, len(examples)))
    reader = load_reader(resolve_model("gemma3-270m")[0], adapter)
    greedy = score_reader(reader, val)
    print("| threshold | F1 | span F1 | abstained (answerable) | abstained (unanswerable) |")
    print("|---|---|---|---|---|")
    kinds = greedy.by_kind
    answerable = [v for k, v in kinds.items() if k != "abstain"]
    n_ans = sum(v["n"] for v in answerable)
    abst_ans = sum(v["abstained"] * v["n"] for v in answerable) / max(1, n_ans)
    print(f"| greedy | {greedy.f1:.3f} | {kinds.get('span', {}).get('f1', 0):.3f} | "
          f"{abst_ans:.3f} | {kinds.get('abstain', {}).get('abstained', 0):.3f} |")  # fmt: skip
    curve = abstention_curve(reader, val, THRESHOLDS)
    for p in curve:
        print(f"| {p.threshold} | {p.f1:.3f} | {p.span_f1:.3f} | {p.abstained_answerable:.3f} | "
              f"{p.abstained_unanswerable:.3f} |", flush=True)  # fmt: skip
    chosen = choose_threshold(greedy.f1, curve)
    print(f"\nchosen: {chosen['abstention_threshold']} ({chosen['why']})")


if __name__ == "__main__":
    main()
