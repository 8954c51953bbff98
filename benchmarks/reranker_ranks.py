"""Where the answer's chunk ranks in the fused pool, before and after each reranker: issue 33's
table of chunk recall@1, recall@3 and MRR@10 (:func:`kbqa.finetune.reranker.rank_metrics`, the
figures ``kbqa finetune reranker`` records on its own held-out questions), on evaluation sets.

For each question the first ``--pool`` hits of the index's fused retrieval (no previous chunks,
as ``kbqa finetune reranker`` ranks them) are scored by each reranker; a chunk is relevant when
it holds every span of a gold answer (:func:`kbqa.evals.metrics.answer_spans_in_context`;
yes/no questions, whose answer is in no chunk, are left out). Questions with no relevant chunk
in the pool count in no figure (``n`` is those that have one). Prints one row per reranker,
``fused`` first, with the median milliseconds a question spent scoring the pool. No reader runs.

    python benchmarks/reranker_ranks.py --index /tmp/bn-idx \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl:100:0 \\
        --rerankers lexical,runs/reranker/adapter

``FILE:N:SEED`` is ``kbqa eval``'s seeded sample of N (``context_selectors.py``'s spec).
Asserts nothing about wall-clock time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from typing import Any

from context_selectors import questions_of

from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.datasets import Question
from kbqa.evals.metrics import answer_spans_in_context
from kbqa.finetune.reranker import rank_metrics
from kbqa.resources import reranker_for, retriever_for
from kbqa.retrieval.rerank import Reranker


def ranks(
    ctx: Context, questions: list[Question], scorers: dict[str, Reranker], pool: int
) -> list[tuple[str, dict[str, Any]]]:
    """``(name, rank_metrics + "ms")`` rows, ``fused`` first, then one per scorer in order.

    Args:
        ctx: Names the index (and its embedder) whose fused retrieval makes the pool.
        questions: Answerable questions (yes/no ones count in no row).
        scorers: Rerankers by the name their row gets.
        pool: Hits of the fused retrieval each question's pool holds.
    """
    retriever = retriever_for(ctx)
    chunks = retriever.chunks
    fused: list[list[bool]] = []
    scored: dict[str, list[list[bool]]] = {name: [] for name in scorers}
    ms: dict[str, list[float]] = {name: [] for name in scorers}
    for q in questions:
        ids = [h.chunk_id for h in retriever.retrieve(q.question, pool, pad_previous=False)]
        holds_any = [answer_spans_in_context(q.answers, chunks[c].text) for c in ids]
        if not ids or all(h is None for h in holds_any):
            continue  # yes/no: no chunk holds the answer's words
        holds = [h == 1.0 for h in holds_any]
        fused.append(holds)
        if not any(holds):
            continue  # no relevant chunk: the same in every row, and skipped by rank_metrics
        passages = [(chunks[c].title, chunks[c].text) for c in ids]
        for name, scorer in scorers.items():
            t0 = time.perf_counter()
            s = scorer.score(q.question, passages)
            ms[name].append((time.perf_counter() - t0) * 1000)
            order = sorted(range(len(ids)), key=lambda i: (-s[i], i))
            scored[name].append([holds[i] for i in order])
    rows: list[tuple[str, dict[str, Any]]] = [("fused", {**rank_metrics(fused), "ms": "-"})]
    for name in scorers:
        med = round(statistics.median(ms[name]), 1) if ms[name] else "-"
        rows.append((name, {**rank_metrics(scored[name]), "ms": med}))
    return rows


def _spec(spec: str) -> str:
    """``spec`` checked as ``FILE[:N[:SEED]]`` (N a whole number >= 1, SEED a whole number)."""
    path, *rest = spec.split(":")
    if not path or len(rest) > 2 or not all(p.lstrip("-").isdigit() for p in rest):
        raise ValueError(f"--questions {spec!r}: expected FILE, FILE:N or FILE:N:SEED")
    if rest and int(rest[0]) < 1:
        raise ValueError(f"--questions {spec!r}: N must be at least 1")
    return spec


def _scorers(ctx: Context, names: str) -> dict[str, Reranker]:
    """The rerankers ``names`` lists, each checked as ``--reranker`` checks it."""
    scorers: dict[str, Reranker] = {}
    for name in (n.strip() for n in names.split(",")):
        if not name or name == "off":
            raise ValueError(f"--rerankers {names!r}: each name must be a reranker, not {name!r}")
        named = replace(ctx, reranker=name)
        named.check_paths()  # a directory that is no reranker: the reason, by name
        scorer = reranker_for(named)
        assert scorer is not None
        scorers[name] = scorer
    return scorers


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", action="append", required=True, help="FILE[:N[:SEED]]")
    ap.add_argument("--pool", type=int, default=20, help="hits a pool holds (at least 1)")
    ap.add_argument("--rerankers", default="lexical",
                    help="comma-separated: lexical, gemma3-270m-reranker or DIR")  # fmt: skip
    args = ap.parse_args(argv)
    try:
        if args.pool < 1:
            raise ValueError(f"--pool must be at least 1, got {args.pool}")
        specs = [_spec(s) for s in args.questions]
        ctx = Context(index_dir=args.index, k=1, rerank_pool=args.pool)  # k is not used here
        retriever_for(ctx)  # a missing index: said before any table
        scorers = _scorers(ctx, args.rerankers)
        for spec in specs:
            rows = ranks(ctx, questions_of(spec), scorers, args.pool)
            print(f"\n{spec}")
            if rows[0][1]["n"] == 0:
                print("no question of this set has a chunk holding its answer in the pool")
                continue
            print("| reranker | n | recall@1 | recall@3 | MRR@10 | ms a question |")
            print("|---|---|---|---|---|---|")
            for name, m in rows:
                print(
                    f"| {name} | {m['n']} | {m['recall@1']:.3f} | {m['recall@3']:.3f} "
                    f"| {m['mrr@10']:.3f} | {m['ms']} |",
                    flush=True,
                )
    except (KBQAError, ValueError, OSError) as exc:
        sys.exit(f"error: {exc}")


if __name__ == "__main__":
    main()
