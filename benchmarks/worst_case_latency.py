"""Worst-case latency: a question every stage abstains on walks the longest path of the graph
(generate, retry k=10, verify, fallback, web_search, finalize). Prints figures; asserts nothing.

    python benchmarks/worst_case_latency.py --index ~/.cache/kbqa/indexes/bnwiki-both \
        --models gemma3-270m,qwen2.5-coder-1.5b --runs RUN_DIR [RUN_DIR ...] --n 3

The questions are taken from earlier ``kbqa eval`` run directories (``--runs``): those whose
final answer was an abstention, slowest first; ``--question`` adds questions of your own (for
example ones the knowledge base cannot hold, so that a stronger model abstains too). Each is
asked once per model (the model is also its own verifier) under two web conditions, each with
a fresh ddgs client (so no back-off or cache carries over from the question before):

- ``unreachable``: the real ddgs code path with no network, which fails at once;
- ``hanging``: ddgs through a loopback proxy that accepts connections and never answers, so
  the search runs into ``--web-timeout``.

For every run it prints the route, the total seconds and the seconds per node.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import threading
import time
from collections import defaultdict

from kbqa.context import Context
from kbqa.embedders import DEFAULT_EMBEDDER
from kbqa.errors import KBQAError
from kbqa.evals.run_dir import load_run
from kbqa.graph import build_graph
from kbqa.resources import retriever_for
from kbqa.web_search import DDGSWebSearch, register_web_search


def hanging_proxy() -> tuple[str, socket.socket]:
    """A loopback TCP server that accepts connections and never replies."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return f"http://127.0.0.1:{server.getsockname()[1]}", server


def settings(args: argparse.Namespace, model: str, web_search: str) -> Context:
    """The run settings for ``model`` (also its own verifier) and a registered web search."""
    return Context(
        index_dir=args.index,
        embedder=args.embedder,
        model=model,
        verifier_model=model,
        web_search=web_search,
        web_timeout=args.web_timeout,
        n_ctx=args.n_ctx,
    )


def abstained_questions(runs: list[str], n: int) -> list[str]:
    """The ``n`` slowest questions that ended in an abstention in the given run directories."""
    rows: dict[str, float] = {}
    for run in runs:
        for rec in load_run(run).records:  # checks each record's fields
            question = rec.get("question")
            if rec["abstained"] and isinstance(question, str) and question.strip():
                rows[question] = max(rows.get(question, 0.0), rec["seconds"])
    return sorted(rows, key=lambda q: -rows[q])[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index", required=True, help="a --strategy both index directory")
    ap.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="the index's embedder")
    ap.add_argument("--models", default="gemma3-270m,qwen2.5-coder-1.5b")
    ap.add_argument("--runs", nargs="+", default=[], help="eval run directories")
    ap.add_argument(
        "--question", action="append", default=[], help="a question to add (repeatable)"
    )
    ap.add_argument("--n", type=int, default=3, help="questions per model")
    ap.add_argument("--web-timeout", type=float, default=5.0)
    ap.add_argument("--n-ctx", type=int, default=2048)
    args = ap.parse_args()

    if args.n < 1:
        raise SystemExit(f"error: --n must be at least 1, got {args.n}")
    if any(not q.strip() for q in args.question):
        raise SystemExit("error: --question is empty")
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if not models:
        raise SystemExit("error: --models names no model")
    try:
        questions = abstained_questions(args.runs, args.n) + args.question
        for model in models:  # settings and index checked before any question runs
            retriever_for(settings(args, model, "off"))
    except (KBQAError, ValueError) as exc:
        raise SystemExit(f"error: {exc}") from None
    if not questions:
        raise SystemExit("no questions: give --runs with abstained questions, or --question")
    proxy, server = hanging_proxy()
    graph = build_graph()
    print(f"{len(questions)} questions; web timeout {args.web_timeout:g} s; hanging proxy {proxy}")
    for model in models:
        for condition in ("unreachable", "hanging"):
            totals: list[float] = []
            full_path: list[float] = []
            for i, question in enumerate(questions):
                name = f"bench-{model}-{condition}-{i}"  # a fresh client: no back-off carried over
                register_web_search(
                    name, DDGSWebSearch(proxy=proxy if condition == "hanging" else None)
                )
                ctx = settings(args, model, name)
                started = time.perf_counter()
                out = graph.invoke({"question": question}, context=ctx)
                seconds = time.perf_counter() - started
                per_node: dict[str, float] = defaultdict(float)
                for t in out.get("timings", []):
                    per_node[t["node"]] += t["seconds"]
                totals.append(seconds)
                if {"fallback", "web_search"} <= set(out["route"]) and out["abstained"]:
                    full_path.append(seconds)
                nodes = " ".join(f"{k}={v:.2f}" for k, v in per_node.items() if v >= 0.01)
                print(f"{model:20s} {condition:11s} {seconds:6.1f} s  {out['answered_by']:10s} "
                      f"route={'>'.join(out['route'])}\n    {nodes}  web_error={out.get('web_error', '')[:60]!r}")  # fmt: skip
            summary = f"max {max(totals):.1f} s, median {statistics.median(totals):.1f} s"
            if full_path:
                summary += (f"; fully abstaining ({len(full_path)}): max {max(full_path):.1f} s, "
                            f"median {statistics.median(full_path):.1f} s")  # fmt: skip
            print(f"== {model} {condition}: {summary}")
    server.close()


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
