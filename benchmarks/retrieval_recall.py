"""Retrieval quality of several built indexes on the same questions, side by side.

Prints one row per index: recall@1/3/10 (the gold document among the first k distinct documents
of a top-10 fused retrieval, as ``kbqa eval run`` counts it), answer-in-context (a gold answer
inside the chunks the graph's first pass hands the reader: k=3 hits, each with its previous
chunk), answer recall@5 (a gold answer inside one of the top-5 chunk texts; both count a
multi-span gold when every span is there and leave yes/no questions out:
:func:`kbqa.evals.metrics.answer_spans_in_context`), and retrieval p50/p95
latency (query embedding included). Fusion is the graph's: BM25 0.65 / dense 0.35.

It first prints the ceiling of both answer measures: the share of the questions whose gold answer
occurs in some chunk of the first index at all (chunks joined, so a multi-span gold whose spans
sit in different chunks counts: an upper bound). No retriever can do better; on a crawl that
missed the pages some questions were written from, it is well below 1.0.

    python benchmarks/retrieval_recall.py \
        --index e5=/path/bnwiki-e5 --index static=/path/bnwiki-static --bm25-only e5 \
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl --n 300 --seed 0

``--bm25-only NAME`` adds a row for that index's BM25 alone (dense weight 0). An index built by
an older kbqa (BM25 over words only) is queried as it was built, so it can stand for the old
default. ``--exclude-sample`` scores the questions outside the seeded sample instead (the set the
defaults were chosen on). Unanswerable questions are left out (they have no gold answer to
find); for question files without ``doc_id`` (CMU LTI) only answer recall means anything.
Asserts nothing about wall-clock time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from kbqa.errors import InputError, KBQAError
from kbqa.evals.datasets import load_questions, select
from kbqa.evals.metrics import (
    answer_spans_in_context,
    answer_spans_in_normalized,
    normalize_answer,
    recall_at_k,
)
from kbqa.resources import load_retriever


def answer_ceiling(index_dir: str, questions: list) -> tuple[float, int]:  # type: ignore[type-arg]
    """``(share, counted)``: the share of the ``counted`` questions with a span gold (yes/no
    golds are left out) whose gold answer occurs in some chunk of the index
    (:func:`answer_spans_in_context` over every chunk text, normalised once and joined with a
    character normalisation never leaves, so no single span runs across two chunks; the spans
    of a multi-span gold may sit in different chunks, so it is an upper bound). ``share`` is
    nan when ``counted`` is 0."""
    retriever = load_retriever(index_dir, "")
    whole = " \x00 ".join(normalize_answer(c.text) for c in retriever.index.chunks)
    scores = [answer_spans_in_normalized(q.answers, whole) for q in questions]
    found = [s for s in scores if s is not None]
    return (sum(found) / len(found) if found else float("nan")), len(found)


def evaluate(index_dir: str, questions: list, dense_weight: float) -> dict[str, float]:  # type: ignore[type-arg]
    retriever = load_retriever(index_dir, "")
    chunks = retriever.index.chunks
    bm25_weight = 0.65
    rows: dict[str, list[float]] = {k: [] for k in ("r1", "r3", "r10", "aic", "ar5")}
    ms: list[float] = []
    retriever.retrieve("warm up", 3, dense_weight=dense_weight)
    for q in questions:
        t0 = time.perf_counter()
        first = retriever.retrieve(
            q.question, 3, bm25_weight=bm25_weight, dense_weight=dense_weight
        )
        ms.append((time.perf_counter() - t0) * 1000)
        hits = retriever.retrieve(
            q.question, 10, bm25_weight=bm25_weight, dense_weight=dense_weight, pad_previous=False
        )
        docs: list[str] = []
        for h in hits:
            if chunks[h.chunk_id].doc_id not in docs:
                docs.append(chunks[h.chunk_id].doc_id)
        for k, key in ((1, "r1"), (3, "r3"), (10, "r10")):
            if q.doc_id:  # CMU LTI names no source page
                rows[key].append(recall_at_k(docs, q.doc_id, k))
        for key, read in (("aic", first), ("ar5", hits[:5])):
            score = answer_spans_in_context(
                q.answers, "\n".join(chunks[c.chunk_id].text for c in read)
            )
            if score is not None:  # None: a yes/no gold, no span to find
                rows[key].append(score)
    out = {k: sum(v) / len(v) if v else float("nan") for k, v in rows.items()}
    out["p50_ms"] = statistics.median(ms)
    out["p95_ms"] = statistics.quantiles(ms, n=20)[18] if len(ms) > 1 else ms[0]
    return out


def _name_dir(spec: str) -> tuple[str, str]:
    name, sep, index_dir = spec.partition("=")
    if not sep or not name or not index_dir:
        raise argparse.ArgumentTypeError(f"{spec!r} is not NAME=DIR (e.g. none=index/bnwiki)")
    return name, index_dir


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative (0 takes every question)")
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    data = Path(
        os.environ.get("KBQA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    ap.add_argument(
        "--index", action="append", required=True, type=_name_dir, help="NAME=DIR, repeatable"
    )
    ap.add_argument("--bm25-only", action="append", default=[], help="NAME of an --index")
    ap.add_argument("--questions", default=str(data / "bn" / "banglarqa_validation.qa.jsonl"))
    ap.add_argument("--n", type=_count, default=300, help="sample size (0: every question)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--exclude-sample",
        action="store_true",
        help="evaluate every question NOT in the seeded sample of --n (a second, disjoint set)",
    )
    args = ap.parse_args()
    indexes = dict(args.index)
    if len(indexes) < len(args.index):
        ap.error("two --index share a NAME: give each index its own")
    if unknown := [n for n in args.bm25_only if n not in indexes]:
        ap.error(f"--bm25-only {unknown[0]}: no --index is named so (named: {', '.join(indexes)})")
    try:
        run(args, indexes)
    except (KBQAError, OSError) as exc:  # a bad question file or index: say which, no traceback
        ap.exit(2, f"error: {exc}\n")


def run(args: argparse.Namespace, indexes: dict[str, str]) -> None:
    """Print the ceiling line, the header and one row per index (and ``--bm25-only`` row).

    Raises:
        KBQAError: a question file that cannot be read, or a directory that is not an index.
        OSError: a path that cannot be read.
    """
    for index_dir in indexes.values():  # every index loaded (and checked) before any figure
        load_retriever(index_dir, "")
    questions = load_questions(args.questions)
    if args.n:
        sample = select(questions, sample=args.n, seed=args.seed)
        if args.exclude_sample:
            taken = {q.qid for q in sample}
            questions = [q for q in questions if q.qid not in taken]
        else:
            questions = sample
    questions = [q for q in questions if q.answerable and q.answers]
    which = "outside the sample" if args.exclude_sample else "sample"
    if not questions:
        raise InputError(
            f"{args.questions}: no answerable question with a gold answer ({which} {args.n}, "
            f"seed {args.seed}): nothing to measure recall on"
        )
    print(f"{args.questions}: {len(questions)} answerable questions ({which} {args.n}, seed "
          f"{args.seed}); fusion BM25 0.65 / dense 0.35 where an index has a dense part")  # fmt: skip
    first = next(iter(indexes.values()))
    share, counted = answer_ceiling(first, questions)
    if counted:
        left_out = len(questions) - counted
        print(
            f"ceiling: a gold answer in some chunk of {first}: {share:.3f} of {counted}"
            + (f" ({left_out} yes/no left out)" if left_out else "")
        )
    else:
        print("ceiling: n/a (every gold is yes/no: no span to find; AiC and AR@5 are nan)")
    print(f"{'index':<24} {'R@1':>6} {'R@3':>6} {'R@10':>6} {'AiC':>6} {'AR@5':>6} "
          f"{'p50 ms':>7} {'p95 ms':>7}")  # fmt: skip
    runs = [(name, d, 0.35) for name, d in indexes.items()]
    runs += [(f"{name} (BM25 only)", indexes[name], 0.0) for name in args.bm25_only]
    for name, d, dense_weight in runs:
        r = evaluate(d, questions, dense_weight)
        print(
            f"{name:<24} {r['r1']:6.3f} {r['r3']:6.3f} {r['r10']:6.3f} {r['aic']:6.3f} "
            f"{r['ar5']:6.3f} {r['p50_ms']:7.1f} {r['p95_ms']:7.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
