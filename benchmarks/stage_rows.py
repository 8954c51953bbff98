"""The graph stopped after each stage, read from one run with every stage on: a row per stage
(reader alone, + retry, + cross-check, + verify, + fallback, + web search) with answerable
EM/F1, unanswerable abstention, overall F1 and the median and p95 seconds of the stages up to
it. Reads ``kbqa eval`` run directories; prints a markdown table per run; asserts nothing.

    python benchmarks/stage_rows.py runs/stages-s0 runs/stages-s1 --default runs/default-s0

``--default`` adds measured rows: runs of the default graph on the same questions, with the
run's own scores and the wall seconds of each question. Peak RSS is
measured per run (``summary.json``), not per stage, so it is printed once per run.
"""

from __future__ import annotations

import argparse

from kbqa.errors import KBQAError
from kbqa.evals.run_dir import load_run
from kbqa.evals.summary import after_each_stage, p95


def fmt(value: float | None, pct: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.1f}%" if pct else f"{value:.3f}"


def row(name: str, r: dict) -> str:
    return (
        f"| {name} | {r['questions']} | {fmt(r['exact_match_answerable'])} / "
        f"{fmt(r['token_f1_answerable'])} | {fmt(r['abstention_rate_unanswerable'], pct=True)} | "
        f"{fmt(r['token_f1'])} | {r['seconds_median']:.2f} s | {r['seconds_p95']:.2f} s |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("runs", nargs="+", help="run directories with every stage to measure on")
    ap.add_argument("--default", nargs="*", default=[], help="runs of the default graph")
    args = ap.parse_args()
    head = (
        "| graph | questions | answerable EM / F1 | unanswerable abstained | F1 | median s | "
        "p95 s |\n|---|---|---|---|---|---|---|"
    )
    try:  # every run read and checked before anything is printed
        runs = {name: load_run(name) for name in [*args.runs, *args.default]}
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    for name, run in runs.items():
        if not run.records:
            raise SystemExit(f"error: {name} holds no record")
    for name in args.runs:
        run = runs[name]
        print(f"\n{name} (peak RSS {run.summary.get('peak_rss_mib') or '-'} MiB)\n\n{head}")
        for i, r in enumerate(after_each_stage(run.records)):
            print(row(r["after"] if i == 0 else f"+ {r['after']}", r))
    for name in args.default:
        run = runs[name]
        s = run.summary
        full = {
            "questions": s["questions"],
            "exact_match_answerable": s["exact_match_answerable"],
            "token_f1_answerable": s["token_f1_answerable"],
            "abstention_rate_unanswerable": s["abstention_rate_unanswerable"],
            "token_f1": s["token_f1"],
            "seconds_median": s["seconds_per_question_median"],
            "seconds_p95": p95([float(r["seconds"]) for r in run.records]),
        }
        print(f"\n{name}, measured (peak RSS {s.get('peak_rss_mib') or '-'} MiB)"
              f"\n\n{head}\n{row('default graph', full)}")  # fmt: skip


if __name__ == "__main__":
    main()
