"""Retrieval latency on a built index, and bm25s against rank-bm25 on the same chunks.

Prints figures; asserts nothing about wall-clock time.

    python benchmarks/retrieval_latency.py --index index/bnwiki \
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl --n 200

Reports p50/p95 latency (ms) of hybrid retrieval (k=3 with padding, the graph's first pass),
BM25 only, dense only (query embedding included); then queries/s of bm25s and rank-bm25
(BM25Okapi, same k1/b and tokens) and their mean top-10 overlap.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from pathlib import Path

import numpy as np

from kbqa.evals.datasets import load_questions
from kbqa.index import bm25_terms, bm25_text
from kbqa.resources import load_retriever
from kbqa.retrieval.tokenizer import TERMS_WORDS_NGRAMS, tokenize, with_ngrams


def percentiles(ms: list[float]) -> str:
    q = statistics.quantiles(ms, n=20)
    return f"p50 {statistics.median(ms):7.2f} ms   p95 {q[18]:7.2f} ms"


def timed(fn, queries: list[str]) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index", required=True)
    data = Path(
        os.environ.get("KBQA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    ap.add_argument(
        "--questions",
        default=str(data / "bn" / "banglarqa_validation.qa.jsonl"),
        help="question file (default: BanglaRQA validation in $KBQA_DATA_DIR or ../shared/data)",
    )
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--rank-bm25-queries",
        type=int,
        default=50,
        help="queries for the (slow) rank-bm25 comparison",
    )
    args = ap.parse_args()

    retriever = load_retriever(args.index, "")  # the index's own embedder
    questions = load_questions(args.questions)
    queries = [
        q.question for q in random.Random(args.seed).sample(questions, min(args.n, len(questions)))
    ]
    chunks = retriever.index.chunks
    print(f"index {args.index}: {len(chunks)} chunks; {len(queries)} queries")

    retriever.retrieve(queries[0], 3)  # warm-up
    print(
        f"hybrid k=3 + padding  {percentiles(timed(lambda q: retriever.retrieve(q, 3), queries))}"
    )
    print(
        f"hybrid k=10           {percentiles(timed(lambda q: retriever.retrieve(q, 10), queries))}"
    )
    print(
        f"bm25 only (bm25s)     {percentiles(timed(lambda q: retriever.search_bm25(q, 30), queries))}"
    )
    if retriever.dense_ready:
        dense_ms = timed(lambda q: retriever.search_dense(q, 30), queries)
        print(f"dense only ({retriever.index.embedder_id}) {percentiles(dense_ms)}")

    from rank_bm25 import BM25Okapi

    t0 = time.perf_counter()
    ngrams = retriever.index.bm25_terms == TERMS_WORDS_NGRAMS
    terms = bm25_terms if ngrams else bm25_text
    okapi = BM25Okapi([terms(c) for c in chunks], k1=1.5, b=0.75)
    print(f"rank-bm25 index build {time.perf_counter() - t0:.1f} s")
    sub = queries[: args.rank_bm25_queries]
    tokens = [with_ngrams(tokenize(q)) if ngrams else tokenize(q) for q in sub]

    t0 = time.perf_counter()
    ours = [retriever.index.bm25.get_scores(t) for t in tokens]
    bm25s_qps = len(sub) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    ref = [okapi.get_scores(t) for t in tokens]
    rank_qps = len(sub) / (time.perf_counter() - t0)
    overlaps = []
    for a, b in zip(ours, ref, strict=True):
        top_a = set(np.argsort(-a)[:10].tolist())
        top_b = set(np.argsort(-b)[:10].tolist())
        overlaps.append(len(top_a & top_b) / 10)
    print(f"bm25s     {bm25s_qps:8.1f} queries/s")
    print(f"rank-bm25 {rank_qps:8.1f} queries/s")
    print(
        f"speed-up  {bm25s_qps / rank_qps:8.1f}x   mean top-10 overlap {statistics.fmean(overlaps):.3f}"
    )


if __name__ == "__main__":
    main()
