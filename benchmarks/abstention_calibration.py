"""Does the graph abstain when it should? Abstention rates of a ``kbqa eval`` run, split by
whether a gold answer was in the context the reader last read, was not, or the question is
unanswerable: for the reader's first answer (the ``generate`` stage) and for the final answer.
Reads run directories (replays their records against the run's index; no model runs); prints a
table; asserts nothing.

    python benchmarks/abstention_calibration.py runs/bn300-s0 runs/bn300-s1

A reader whose abstention meant "the context lacks the answer" would abstain on nearly every
question in the middle row and few in the first.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from kbqa.answers.normalize import answer_in_context
from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.evals.run_dir import load_run
from kbqa.resources import retriever_for

GROUPS = ("answer in context", "answer not in context", "unanswerable")


def calibration(run_dir: str) -> dict[str, tuple[int, float, float]]:
    """``group -> (questions, first-answer abstention rate, final abstention rate)``."""
    run = load_run(run_dir)
    settings = json.loads((Path(run_dir) / "config.json").read_text("utf-8"))["context"]
    ctx = Context(index_dir=settings["index_dir"], embedder=settings.get("embedder", ""),
                  web_search="off")  # fmt: skip
    chunks = retriever_for(ctx).chunks
    sub_chunks: dict[str, Sequence[Chunk]] = {}
    n, first, final = Counter[str](), Counter[str](), Counter[str]()
    for r in run.records:
        if not r["answerable"]:
            group = "unanswerable"
        else:
            sub = r.get("context_index") or None
            if sub and sub not in sub_chunks:
                sub_chunks[sub] = retriever_for(ctx, sub).chunks
            read = sub_chunks[sub] if sub else chunks
            text = "\n".join(read[c].text for c in r["context_chunk_ids"])
            group = GROUPS[0] if answer_in_context(r["gold"], text) else GROUPS[1]
        stage = next((s for s in r["stage_answers"] if s["stage"] == "generate"), None)
        n[group] += 1
        first[group] += bool(stage and stage["abstained"])
        final[group] += bool(r["abstained"])
    return {g: (n[g], first[g] / n[g], final[g] / n[g]) for g in GROUPS if n[g]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("runs", nargs="+", help="kbqa eval run directories")
    args = ap.parse_args()
    print("| run | questions | n | reader's first answer abstained | final answer abstained |")
    print("|---|---|---|---|---|")
    for run in args.runs:
        for group, (n, first, final) in calibration(run).items():
            print(f"| {run} | {group} | {n} | {first:.1%} | {final:.1%} |")


if __name__ == "__main__":
    main()
