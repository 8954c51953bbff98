"""What a Milvus Lite store costs as the knowledge base grows: insert time, hybrid-search
latency p50/p95, on-disk size and process RSS, at a chosen number of chunks (default 10^5).

The chunks are a built index's, repeated (chunk ids, document ids and previous-chunk links
offset per copy) until there are ``--chunks`` of them; every copy keeps its BM25 row and dense
vector, so the store has the sparse density, vector dimension and text sizes of the real
knowledge base, and each query's candidate lists are as long as they would be on real data.

    python benchmarks/milvus_scale.py --index /work/idx/bn-e5-v2 --store /tmp/scale.db \
        --chunks 100000 --phase write
    python benchmarks/milvus_scale.py --index /work/idx/bn-e5-v2 --store /tmp/scale.db \
        --chunks 100000 --phase query --n 200

Run the two phases as two processes, so each RSS figure is its own phase's. Latency is for
``retrieve(question, 10)`` through :class:`kbqa.stores.milvus.MilvusRetriever` (query embedding
included) on the first ``--n`` BanglaRQA validation questions. Asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from kbqa.evals.datasets import load_questions
from kbqa.index import load_index, peak_rss_mib
from kbqa.stores.milvus import open_milvus_retriever, parse_store_uri
from kbqa.stores.milvus.store import (
    META,
    _write_chunks,
    _write_meta,
    _write_terms,
    collection_name,
)
from kbqa.stores.milvus.uri import connect


def _rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024


def repeated(index: Any, n: int) -> Any:
    """A stand-in for a :class:`ChunkIndex` of ``n`` chunks: ``index``'s, repeated."""
    base = len(index.chunks)
    copies = -(-n // base)
    chunks = []
    for c in range(copies):
        off = c * base
        for ch in index.chunks:
            if len(chunks) == n:
                break
            chunks.append(
                replace(
                    ch,
                    chunk_id=ch.chunk_id + off,
                    doc_id=f"{ch.doc_id}#{c}",
                    prev_chunk_id=ch.prev_chunk_id + off if ch.prev_chunk_id >= 0 else -1,
                )
            )
    s = index.bm25.scores
    indptr = np.asarray(s["indptr"])
    terms = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    docs = np.concatenate([np.asarray(s["indices"]) + c * base for c in range(copies)])
    terms = np.tile(terms, copies)
    data = np.tile(np.asarray(s["data"]), copies)
    keep = docs < n
    docs, terms, data = docs[keep], terms[keep], data[keep]
    order = np.lexsort((docs, terms))
    scores = {
        "data": data[order],
        "indices": docs[order],
        "indptr": np.searchsorted(terms[order], np.arange(len(indptr))),
        "num_docs": n,
    }
    bm25 = SimpleNamespace(
        scores=scores, vocab_dict=index.bm25.vocab_dict, nonoccurrence_array=None
    )
    vectors = index.dense.reconstruct_n(0, base)
    dense = np.tile(vectors, (copies, 1))[:n]
    dense_ns = SimpleNamespace(ntotal=n, reconstruct_n=lambda _s, _n: dense)
    return SimpleNamespace(
        chunks=chunks,
        bm25=bm25,
        dense=dense_ns,
        path=index.path,
        manifest=index.manifest | {"chunks": n},
    )


def write(args: argparse.Namespace) -> None:
    index = load_index(args.index)
    t0 = time.perf_counter()
    big = repeated(index, args.chunks)
    prep = time.perf_counter() - t0
    store = parse_store_uri(f"milvus://{args.store}#{args.name}")
    client = connect(store, create=True)
    for name in client.list_collections():
        client.drop_collection(name)
    t0 = time.perf_counter()
    _write_terms(client, collection_name(store, "terms", "coverage"), big)
    t_terms = time.perf_counter() - t0
    _write_chunks(client, collection_name(store, "chunks", "coverage"), big)
    t_all = time.perf_counter() - t0
    top = big.manifest
    _write_meta(
        client,
        collection_name(store, META),
        {"manifest": json.dumps(top), "manifest/coverage": json.dumps(top), "files": "{}"},
    )
    client.close()
    size = subprocess.run(["du", "-sm", args.store], capture_output=True, text=True, check=True)
    print(f"{args.chunks} chunks (from {len(index.chunks)}; {prep:.1f} s to repeat them)")
    print(
        f"insert          {t_all:.1f} s ({t_terms:.1f} s of it the {len(index.bm25.vocab_dict)} "
        f"terms; {args.chunks / (t_all - t_terms):.0f} chunks/s)"
    )
    print(f"on disk         {size.stdout.split()[0]} MiB ({args.store})")
    print(
        f"writer RSS      now {_rss_mib():.0f} MiB, peak {peak_rss_mib():.0f} MiB "
        "(the in-process index is loaded too)"
    )


def query(args: argparse.Namespace) -> None:
    base = _rss_mib()
    t0 = time.perf_counter()
    r = open_milvus_retriever(f"milvus://{args.store}#{args.name}")
    opened = time.perf_counter() - t0
    after_open = _rss_mib()
    data = Path(
        os.environ.get("KBQA_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")
    )
    questions = load_questions(str(data / "bn" / "banglarqa_validation.qa.jsonl"))[: args.n]
    r.retrieve("warm up", 10)
    print(
        f"opened in {opened:.1f} s; RSS {base:.0f} MiB before, {after_open:.0f} MiB after "
        "(the e5 query embedder included)"
    )
    for fusion, ranker in (("weighted", "kbqa"), ("weighted", "milvus"), ("rrf", "milvus")):
        r.weighted_ranker = ranker  # type: ignore[assignment]
        ms = []
        for q in questions:
            t = time.perf_counter()
            r.retrieve(q.question, 10, fusion=fusion, pad_previous=False)  # type: ignore[arg-type]
            ms.append((time.perf_counter() - t) * 1000)
        p95 = statistics.quantiles(ms, n=20)[18]
        print(
            f"{fusion:<8} ({ranker} fuses)  p50 {statistics.median(ms):7.1f} ms   p95 {p95:7.1f} ms"
        )
    print(f"query RSS       now {_rss_mib():.0f} MiB, peak {peak_rss_mib():.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index", required=True, help="a built index with a dense part")
    ap.add_argument("--store", required=True, help="Milvus Lite path (.db) to create")
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--phase", choices=["write", "query"], required=True)
    ap.add_argument("--n", type=int, default=200, help="questions timed (query phase)")
    ap.add_argument("--name", default="scale", help="collections' base name (#NAME)")
    args = ap.parse_args()
    (write if args.phase == "write" else query)(args)


if __name__ == "__main__":
    main()
