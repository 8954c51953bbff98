"""Load test: N concurrent clients asking questions through the Python API (one ``KBQA`` shared
by client threads), with the reader behind an OpenAI-compatible server (``--llm-url``).

Every question is asked once; each answer (or error) is one JSON record in ``--out``. The run
checks that nothing is lost: one record per question id, none twice. Prints, per concurrency:
throughput, latency p50/p95, errors, and the mean seconds per graph node (where the time goes).

    python -m llama_cpp.server --model ~/.cache/kbqa/models/gemma-3-270m-q4_k_m.gguf \\
        --lora_path src/kbqa/llm/adapters/gemma3-270m-reader/adapter.gguf \\
        --model_alias reader --n_ctx 4096 --n_threads 2 --logits_all true \\
        --host 127.0.0.1 --port 8000 &
    python benchmarks/load_test.py --index /work/idx/bn-none-v2 \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl \\
        --llm-url http://127.0.0.1:8000/v1 --llm-model reader --clients 1 4 16 --n 200
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kbqa.api import KBQA
from kbqa.evals.datasets import load_questions


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(qa: KBQA, questions: list[Any], clients: int, out: Path) -> dict[str, Any]:
    """Ask every question once with ``clients`` threads; one JSON line per question in ``out``."""
    lock = threading.Lock()

    def ask(q: Any) -> None:
        start = time.perf_counter()
        record: dict[str, Any] = {"qid": q.qid, "clients": clients}
        try:
            answer = qa.ask(q.question)
            record |= {"answer": answer.answer, "abstained": answer.abstained,
                       "timings": answer.timings}  # fmt: skip
        except Exception as exc:  # a load test records every failure, it does not stop
            record["error"] = f"{type(exc).__name__}: {exc}"
        record["seconds"] = time.perf_counter() - start
        with lock, out.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(ask, questions))
    wall = time.perf_counter() - start
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    records = [r for r in records if r["clients"] == clients]
    counts = Counter(r["qid"] for r in records)
    lost = {q.qid for q in questions} - set(counts)
    doubled = [qid for qid, n in counts.items() if n > 1]
    seconds = [r["seconds"] for r in records]
    nodes: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for node, s in r.get("timings", []):
            nodes[node].append(s)
    return {
        "clients": clients,
        "questions": len(questions),
        "records": len(records),
        "lost": len(lost),
        "doubled": len(doubled),
        "errors": sum("error" in r for r in records),
        "wall_s": wall,
        "throughput_qps": len(questions) / wall,
        "p50_s": statistics.median(seconds),
        "p95_s": percentile(seconds, 0.95),
        "node_mean_s": {n: sum(v) / len(records) for n, v in sorted(nodes.items())},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", required=True, type=Path)
    ap.add_argument("--llm-url", required=True)
    ap.add_argument("--llm-model", default="")
    ap.add_argument("--clients", type=int, nargs="+", default=[4, 16])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("runs/load_test"))
    ap.add_argument(
        "--set", nargs="*", default=[], metavar="FIELD=VALUE",
        help="Context settings for the run (JSON values), e.g. max_retries=0",
    )  # fmt: skip
    args = ap.parse_args()
    settings = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    questions = load_questions(args.questions)
    questions = random.Random(args.seed).sample(questions, min(args.n, len(questions)))
    qa = KBQA.from_index(args.index, llm_url=args.llm_url, llm_model=args.llm_model,
                         web_search="off", **settings)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for clients in args.clients:
        path = args.out / f"records-{clients}.jsonl"
        path.unlink(missing_ok=True)
        row = run(qa, questions, clients, path)
        rows.append(row)
        print(json.dumps(row), flush=True)
    (args.out / "summary.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(
        "\n| clients | questions | records | lost | errors | q/s | p50 s | p95 s | "
        "generate s | retrieve s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["node_mean_s"]
        print(
            f"| {r['clients']} | {r['questions']} | {r['records']} | {r['lost']} | "
            f"{r['errors']} | {r['throughput_qps']:.2f} | {r['p50_s']:.2f} | "
            f"{r['p95_s']:.2f} | {n.get('generate', 0):.2f} | {n.get('retrieve', 0):.2f} |"
        )


if __name__ == "__main__":
    main()
