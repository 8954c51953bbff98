"""The reader in process (llama.cpp) against the same reader behind an OpenAI-compatible server
(``--llm-url``): per question, time to the first streamed token and to the final answer, and
whether the answers are equal. One client, questions one after another.

    python benchmarks/llm_server_latency.py --index /work/idx/bn-none-v2 \\
        --questions ../shared/data/bn/banglarqa_validation.qa.jsonl \\
        --llm-url http://127.0.0.1:8000/v1 --llm-model reader --n 20
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from kbqa.api import KBQA
from kbqa.evals.datasets import load_questions


def timed(qa: KBQA, question: str) -> tuple[float, float, str]:
    """(seconds to the first token, seconds to the answer, the answer)."""
    start = time.perf_counter()
    first = None
    answer = ""
    for event in qa.stream(question):
        if event.kind == "token" and first is None:
            first = time.perf_counter() - start
        if event.kind == "answer" and event.answer is not None:
            answer = event.answer.answer
    total = time.perf_counter() - start
    return (first if first is not None else total), total, answer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", required=True, type=Path)
    ap.add_argument("--llm-url", required=True)
    ap.add_argument("--llm-model", default="")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    questions = random.Random(args.seed).sample(load_questions(args.questions), args.n)
    settings = {"grounding": "snap", "web_search": "off"}
    local = KBQA.from_index(args.index, **settings)
    remote = KBQA.from_index(args.index, llm_url=args.llm_url, llm_model=args.llm_model,
                             **settings)  # fmt: skip
    local.ask(questions[0].question)  # warm both (first-use costs are not the comparison)
    remote.ask(questions[0].question)
    rows = []
    for q in questions:
        a = timed(local, q.question)
        b = timed(remote, q.question)
        rows.append((a, b))
        print(json.dumps({"qid": q.qid, "local": a, "server": b}, ensure_ascii=False), flush=True)
    same = sum(a[2] == b[2] for a, b in rows)
    print(f"\nequal answers: {same}/{len(rows)}")
    print("| reader | first token p50 s | answer p50 s | answer p95 s |")
    print("|---|---|---|---|")
    for name, i in (("in process", 0), ("llama_cpp.server", 1)):
        first = [r[i][0] for r in rows]
        total = sorted(r[i][1] for r in rows)
        print(
            f"| {name} | {statistics.median(first):.2f} | {statistics.median(total):.2f} | "
            f"{total[min(len(total) - 1, round(0.95 * (len(total) - 1)))]:.2f} |"
        )
    ratio = statistics.median(r[1][1] for r in rows) / statistics.median(r[0][1] for r in rows)
    print(f"server / in process (median answer time): {ratio:.2f}x")


if __name__ == "__main__":
    main()
