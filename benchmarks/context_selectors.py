"""The answer in the context the reader reads, for each way of choosing that context.

For each question set, prints one row per selector: the share of answerable questions whose
gold answer is in the chunks the graph's first pass hands the reader
(:func:`kbqa.evals.metrics.answer_spans_in_context`: every span of a multi-span gold, yes/no
questions left out), the median characters read, and the median milliseconds of retrieval and
reranking. No LLM runs. Selectors:

- ``fused k=K``: the default (fused top k, each with its previous chunk), and one more chunk;
- ``NAME w=W``: the fused top ``--pool`` reranked by each of ``--rerankers`` (``lexical``:
  :class:`~kbqa.retrieval.rerank.SentenceReranker`; a ``kbqa finetune reranker`` directory:
  the LLM reranker; ``first-page``: :class:`FirstPage`, more passages of the first page) with
  fused weight W, top k kept, previous chunks added;
- ``NAME w=W +N`` (with ``--add N``): the fused top k as they are, then the reranker's best N
  of the rest of the pool (``--rerank-add N``).

    python benchmarks/context_selectors.py --index index/bnwiki \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl:300:0 \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl:300:1 \\
        --questions benchmarks/data/bn_natural.qa.jsonl

``FILE:N:SEED`` takes the seeded sample of N questions (``kbqa eval``'s); a plain FILE takes all.
Asserts nothing about wall-clock time.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

from kbqa.context import Context
from kbqa.evals.datasets import Question, load_questions, select
from kbqa.evals.metrics import answer_spans_in_context
from kbqa.passages import retrieve_records
from kbqa.resources import Resources, retriever_for


def questions_of(spec: str) -> list[Question]:
    path, *rest = spec.split(":")
    qs = load_questions(path)
    if rest:
        qs = select(qs, sample=int(rest[0]), seed=int(rest[1]) if len(rest) > 1 else 0)
    return [q for q in qs if q.answerable and q.answers]


class FirstPage:
    """Issue 33's "more passages of the first page": the chunks of the fused pool's first page
    (told apart by title) score 1, the rest 0, so below fused weight 0.5 the reader reads the
    first page's best chunks, in fused order, before any other page's."""

    id = "first-page"

    def score(self, question: str, passages: list[tuple[str, str]]) -> list[float]:
        first = passages[0][0] if passages else ""
        return [1.0 if title == first else 0.0 for title, _ in passages]


def _reranked(base: Context, name: str, weight: float) -> Context:
    if name == "first-page":  # handed in: a selector of this benchmark, not a shipped reranker
        return replace(base, rerank_weight=weight, resources=Resources(reranker=FirstPage()))
    return replace(base, reranker=name, rerank_weight=weight)


def measure(ctx: Context, questions: list[Question]) -> tuple[float, int, float, int]:
    """(answer-in-context share, median characters read, median ms, questions counted)."""
    chunks = retriever_for(ctx).chunks
    hits: list[float] = []
    chars: list[int] = []
    ms: list[float] = []
    for q in questions:
        t0 = time.perf_counter()
        records = retrieve_records(q.question, ctx.k, ctx)
        ms.append((time.perf_counter() - t0) * 1000)
        texts = [chunks[r["chunk_id"]].text for r in records]
        chars.append(sum(map(len, texts)))
        score = answer_spans_in_context(q.answers, "\n".join(texts))
        if score is not None:
            hits.append(score)
    share = sum(hits) / len(hits) if hits else float("nan")
    return share, int(statistics.median(chars)), statistics.median(ms), len(hits)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", action="append", required=True, help="FILE[:N[:SEED]]")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--pool", type=int, default=20)
    ap.add_argument("--weights", default="0.0,0.3,0.5", help="fused weights of the reranked rows")
    ap.add_argument("--rerankers", default="lexical",
                    help="comma-separated: lexical, first-page or DIR")  # fmt: skip
    ap.add_argument("--add", type=int, default=0,
                    help="also rows adding the reranker's best N to the fused top k")  # fmt: skip
    args = ap.parse_args()
    base = Context(index_dir=args.index, k=args.k, rerank_pool=args.pool)
    selectors = [
        (f"fused k={args.k}", base),
        (f"fused k={args.k + 1}", replace(base, k=args.k + 1)),
    ]
    for name in args.rerankers.split(","):
        for w in args.weights.split(","):
            ctx = _reranked(base, name, float(w))
            selectors.append((f"{Path(name).name[:10]} w={float(w):.1f}", ctx))
            if args.add:
                added = replace(ctx, rerank_add=args.add)
                selectors.append((f"{Path(name).name[:10]} w={float(w):.1f} +{args.add}", added))
    for spec in args.questions:
        qs = questions_of(spec)
        print(f"\n{spec}: {len(qs)} answerable questions")
        print(f"{'selector':<19} {'AiC':>6} {'n':>5} {'chars':>6} {'ms':>6}")
        for name, ctx in selectors:
            share, chars, ms, n = measure(ctx, qs)
            print(f"{name:<19} {share:6.3f} {n:5d} {chars:6d} {ms:6.1f}", flush=True)


if __name__ == "__main__":
    main()
