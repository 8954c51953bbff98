"""Milvus Lite against the in-process index on the same questions: does hybrid retrieval on
Milvus return the in-process top-10, and what does it cost?

Prints, per fusion (weighted with kbqa's min-max fusion on Milvus's two candidate lists,
weighted with Milvus's ``WeightedRanker(0.65, 0.35)``, and Milvus's ``RRFRanker(60)``): top-10
overlap (mean |A & B| / 10; share of questions with the same ids in the same order; same set),
why the rest differ (a near-tie: the first differing chunks' in-process fused scores within
``--tie`` of each other, or their BM25/dense candidate lists differ; or neither), recall@3 for
both (gold document among the first 3 distinct documents; a gold answer inside the top-3 chunk
texts), and retrieval latency p50/p95 for both (top-10, query embedding included). Then the
previous-chunk padding (k=3, as the graph asks) and, for a ``--strategy both`` index, the
precision sub-index.

    python benchmarks/milvus_parity.py --index /work/idx/bn-e5-v2 \
        --store 'milvus:///work/milvus/bn.db#bne5' --n 200 [--write]

``--write`` first copies ``--index`` into ``--store`` (``kbqa index --store`` does the same).
Questions: the first ``--n`` of the file, in file order (unanswerable ones count for overlap
and latency; recall counts the answerable ones). Asserts nothing about wall-clock time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from kbqa.evals.datasets import load_questions
from kbqa.evals.metrics import answer_in_context, recall_at_k
from kbqa.resources import load_retriever
from kbqa.stores.milvus import open_milvus_retriever, parse_store_uri, write_store

FUSIONS = (("weighted", "kbqa"), ("weighted", "milvus"), ("rrf", "milvus"))


def _top(r: Any, q: str, fusion: str, k: int = 10) -> tuple[list[int], list[float], float]:
    t0 = time.perf_counter()
    hits = r.retrieve(q, k, fusion=fusion, pad_previous=False)
    ms = (time.perf_counter() - t0) * 1000
    return [h.chunk_id for h in hits], [h.score for h in hits], ms


def _why(
    a: list[int], sa: list[float], b: list[int], local: Any, remote: Any, q: str, tie: float
) -> str:
    """Why two top-10 lists differ, checked in this order: ``near-tie`` (the first differing
    chunk's in-process fused score is within ``tie`` of a neighbour's), ``candidates`` (a
    retriever's top-30 candidate sets differ), ``route order`` (same candidates, but a
    retriever lists equal-scored ones in another order, which moves RRF ranks), ``other``."""
    i = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if i < len(a) and (
        (i + 1 < len(a) and abs(sa[i] - sa[i + 1]) <= tie)
        or (i > 0 and abs(sa[i] - sa[i - 1]) <= tie)
    ):
        return "near-tie"
    lists = [
        (getattr(local, s)(q, 30), getattr(remote, s)(q, 30))
        for s in ("search_bm25", "search_dense")
    ]
    if any(set(x) != set(y) for x, y in lists):
        return "candidates"
    if any(sorted(x, key=lambda c: -x[c]) != list(y) for x, y in lists):
        return "route order"
    return "other"


def compare(
    local: Any, remote: Any, questions: list[Any], tie: float, only: str | None = None
) -> None:
    chunks = local.index.chunks
    for fusion, ranker in FUSIONS:
        if only and only != f"{fusion}-{ranker}":
            continue
        remote.weighted_ranker = ranker
        rows: dict[str, list[float]] = {
            k: [] for k in ("ov", "same", "set", "lr3", "rr3", "la3", "ra3")
        }
        ms_l: list[float] = []
        ms_r: list[float] = []
        why: dict[str, int] = {}
        example = ""
        for q in questions:
            a, sa, tl = _top(local, q.question, fusion)
            b, _, tr = _top(remote, q.question, fusion)
            ms_l.append(tl)
            ms_r.append(tr)
            rows["ov"].append(len(set(a) & set(b)) / max(len(a), len(b), 1))
            rows["same"].append(float(a == b))
            rows["set"].append(float(set(a) == set(b)))
            if a != b:
                reason = _why(a, sa, b, local, remote, q.question, tie)
                why[reason] = why.get(reason, 0) + 1
                if reason == "other" and not example:
                    example = f"{q.qid}: in-process {a}\n    milvus     {b}"
            if q.answerable and q.answers and q.doc_id:
                for ids, key in ((a, "l"), (b, "r")):
                    docs = [chunks[c].doc_id for c in ids]
                    rows[f"{key}r3"].append(recall_at_k(docs, q.doc_id, 3))
                    text = "\n".join(chunks[c].text for c in ids[:3])
                    rows[f"{key}a3"].append(answer_in_context(q.answers, text))
        m = {k: sum(v) / len(v) if v else float("nan") for k, v in rows.items()}
        name = f"{fusion} ({ranker} fuses)" if fusion == "weighted" else f"{fusion} (milvus fuses)"
        print(f"\n{name}: {len(questions)} questions")
        print(
            f"  top-10 overlap   mean {m['ov']:.3f}; identical {m['same']:.1%}; same set {m['set']:.1%}"
        )
        print(f"  differences      {why or 'none'}")
        if example:
            print(f"  e.g. {example}")
        print(
            f"  recall@3 (doc)   in-process {m['lr3']:.3f}   milvus {m['rr3']:.3f}  ({len(rows['lr3'])} answerable)"
        )
        print(f"  answer in top-3  in-process {m['la3']:.3f}   milvus {m['ra3']:.3f}")
        for label, ms in (("in-process", ms_l), ("milvus lite", ms_r)):
            p95 = statistics.quantiles(ms, n=20)[18]
            print(f"  latency {label:<12} p50 {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms")
    remote.weighted_ranker = "kbqa"


def check_padding(local: Any, remote: Any, questions: list[Any]) -> None:
    same = text_same = pads = 0
    for q in questions:
        a = local.retrieve(q.question, 3)
        b = remote.retrieve(q.question, 3)
        same += [(c.chunk_id, c.rank, c.is_padding) for c in a] == [
            (c.chunk_id, c.rank, c.is_padding) for c in b
        ]
        for c in b:
            if c.is_padding:
                pads += 1
                text_same += remote.chunks[c.chunk_id] == local.index.chunks[c.chunk_id]
    print(
        f"\npadding (k=3, weighted, kbqa fuses): same chunks, ranks and padding flags on "
        f"{same}/{len(questions)} questions; {text_same}/{pads} padding chunks read from Milvus "
        "equal the in-process ones (every field)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    data = Path(
        os.environ.get("KBQA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    ap.add_argument("--index", required=True, help="in-process index directory")
    ap.add_argument("--store", required=True, help="milvus://... store of the same index")
    ap.add_argument("--write", action="store_true", help="write --index into --store first")
    ap.add_argument("--questions", default=str(data / "bn" / "banglarqa_validation.qa.jsonl"))
    ap.add_argument("--n", type=int, default=200, help="the first N questions of the file")
    ap.add_argument("--tie", type=float, default=1e-4, help="fused-score gap counted as a near-tie")
    ap.add_argument(
        "--only",
        choices=[f"{f}-{r}" for f, r in FUSIONS],
        help="run one fusion (weighted-kbqa, weighted-milvus or rrf-milvus)",
    )
    ap.add_argument("--no-padding", action="store_true", help="skip the padding check")
    args = ap.parse_args()
    if args.write:
        t0 = time.perf_counter()
        written = write_store(args.index, parse_store_uri(args.store), replace=True)
        print(f"wrote {written} into {args.store} in {time.perf_counter() - t0:.1f} s")
    questions = load_questions(args.questions)[: args.n]
    print(f"{args.questions}: the first {len(questions)} questions")
    strategies = [None]
    if (Path(args.index) / "precision").is_dir():
        strategies.append("precision")
    for strategy in strategies:
        local = load_retriever(args.index, "", strategy)
        t0 = time.perf_counter()
        remote = open_milvus_retriever(args.store, "", strategy)
        print(
            f"\n=== sub-index {strategy or 'default'}: {len(local.chunks)} chunks in process, "
            f"{len(remote.chunks)} in Milvus (opened in {time.perf_counter() - t0:.1f} s)"
        )
        for r in (local, remote):
            r.retrieve("warm up", 3)
        compare(local, remote, questions, args.tie, args.only)
        if not args.no_padding:
            check_padding(local, remote, questions)


if __name__ == "__main__":
    main()
