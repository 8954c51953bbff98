"""What more CPU buys: every checkpoint of a `kbqa finetune reader` run (kept with
``--keep-checkpoints 0``), exported and scored as served, against its training time. Prints a
table; asserts nothing.

    python benchmarks/finetune_budget.py --run runs/finetune-reader \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl --index index/bnwiki --n 60

Columns: training minutes and examples seen at the checkpoint; F1 on the run's own validation
examples (held-out documents of the training set, scored by llama.cpp: all kinds, then spans,
abstentions and yes/no apart); and reader-only F1 on BanglaRQA answerable questions with the
gold passage given (``benchmarks/reader_only.py``). Step 0 is the base model: on the validation
examples with the same ``tuned`` prompt, on BanglaRQA as served (its few-shot prompt).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from reader_only import gold_passages
from reader_only import run as reader_only

from kbqa.context import Context
from kbqa.evals.datasets import load_questions, select
from kbqa.finetune.evaluate import load_reader, score_reader
from kbqa.finetune.examples import read_examples
from kbqa.finetune.export import export_checkpoint
from kbqa.llm.models import resolve_model
from kbqa.resources import load_retriever


def nearest(checkpoints: list[Path], minutes: float) -> Path:
    """The checkpoint whose recorded training time is closest to ``minutes``."""

    def elapsed(p: Path) -> float:
        progress = p / "progress.json"
        return json.loads(progress.read_text())["elapsed_seconds"] / 60 if progress.is_file() else 0

    return min(checkpoints, key=lambda p: abs(elapsed(p) - minutes))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--run", required=True, help="a kbqa finetune reader output directory")
    ap.add_argument("--questions", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--n", type=int, default=60, help="BanglaRQA questions (reader-only)")
    ap.add_argument("--val", type=int, default=200, help="validation examples of the run")
    ap.add_argument(
        "--minutes",
        default="",
        help="score only the checkpoints nearest these training minutes (15,60,...)",
    )
    ap.add_argument(
        "--steps",
        default="",
        help="score only the checkpoints at these steps (400,1000,...); for a run whose wall "
        "time holds pauses, where minutes say little",
    )
    ap.add_argument("--no-base", action="store_true", help="leave out the base model's row")
    ap.add_argument("--abstention-threshold", type=float, default=0.0)
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    run = Path(args.run)
    examples = [e for e in read_examples(run / "examples.jsonl") if e.split == "val"]
    val = random.Random(0).sample(examples, min(args.val, len(examples)))
    questions = [q for q in load_questions(args.questions) if q.answerable and q.doc_id]
    index = load_retriever(args.index, Context().embedder).index
    items = [(q, p) for q in select(questions, sample=args.n, seed=0)
             if (p := gold_passages(index, q.doc_id or "", q.answers))]  # fmt: skip
    checkpoints = sorted((run / "checkpoints").glob("checkpoint-*"),
                         key=lambda p: int(p.name.split("-")[-1]))  # fmt: skip
    if args.minutes:
        checkpoints = sorted({nearest(checkpoints, float(m)) for m in args.minutes.split(",")},
                             key=lambda p: int(p.name.split("-")[-1]))  # fmt: skip
    if args.steps:
        wanted = {int(x) for x in args.steps.split(",")}
        missing = wanted - {int(p.name.split("-")[-1]) for p in checkpoints}
        if missing:
            raise SystemExit(f"no checkpoint at step {', '.join(map(str, sorted(missing)))}")
        checkpoints = [p for p in checkpoints if int(p.name.split("-")[-1]) in wanted]
    base = resolve_model("gemma3-270m")[0]
    rows: list[dict[str, Any]] = []
    print("| minutes | steps | val F1 | span F1 | abstain | yes/no | BanglaRQA reader-only F1 |")
    print("|---|---|---|---|---|---|---|")
    for checkpoint in [*([] if args.no_base else [None]), *checkpoints]:
        adapter = None
        minutes, steps = 0.0, 0
        if checkpoint is not None:
            out = run / "budget" / checkpoint.name
            adapter = export_checkpoint(checkpoint, out)
            progress = json.loads((out / "manifest.json").read_text())["training"]
            minutes, steps = progress["elapsed_seconds"] / 60, progress["global_step"]
        threshold = args.abstention_threshold if adapter else 0.0
        scores = score_reader(load_reader(base, adapter, n_ctx=4096), val,
                              abstention_threshold=threshold)  # fmt: skip
        kinds = scores.by_kind
        yes_no = [kinds[k] for k in ("yes", "no") if k in kinds]
        yn = sum(k["f1"] * k["n"] for k in yes_no) / max(1, sum(k["n"] for k in yes_no))
        ctx = Context(index_dir=args.index, model="gemma3-270m", web_search="off",
                      reader_adapter=str(adapter.parent) if adapter else "",
                      abstention_threshold=threshold)  # fmt: skip
        bangla = reader_only(ctx.model, ctx, items)
        row = {"minutes": round(minutes, 1), "steps": steps, "val_f1": scores.f1,
               "span_f1": kinds.get("span", {}).get("f1", 0.0),
               "abstain": kinds.get("abstain", {}).get("f1", 0.0), "yes_no": yn,
               "banglarqa_reader_f1": bangla["f1"]}  # fmt: skip
        rows.append(row)
        print(f"| {row['minutes']} | {steps} | {row['val_f1']:.3f} | {row['span_f1']:.3f} | "
              f"{row['abstain']:.3f} | {row['yes_no']:.3f} | {row['banglarqa_reader_f1']:.3f} |",
              flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
