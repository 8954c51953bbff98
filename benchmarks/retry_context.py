"""The retry with the passages the reader has not read first (``--retry-unread-first``, the
default) against HybridRAG-BN's plain top ``retry_k`` (``--no-retry-unread-first``), on the
questions both runs retried. Reads two ``kbqa eval`` run directories of the same questions and
settings otherwise; prints one table; asserts nothing.

    kbqa eval run Q --index DIR --sample 300 --seed 0 -o runs/unread
    python benchmarks/retry_context.py --unread runs/unread --plain runs/plain --subset retried.jsonl
    kbqa eval run retried.jsonl --index DIR --no-retry-unread-first -o runs/plain
    python benchmarks/retry_context.py --unread runs/unread --plain runs/plain

With ``--subset FILE`` it writes the questions the first run retried (in the shared/data
format, read back from the question file the run's ``config.json`` names) so that the second
run needs to read only those: the first pass is the same in both, so only they can differ.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kbqa.errors import KBQAError
from kbqa.evals.metrics import max_over_golds, token_f1
from kbqa.evals.run_dir import load_run


def f1(entry: dict[str, Any], gold: list[str]) -> float:
    return float(
        max_over_golds(token_f1, str(entry["answer"]), gold, abstained=bool(entry["abstained"]))
    )


def after(record: dict[str, Any], stage: str) -> dict[str, Any] | None:
    """The last ``stage_answers`` entry of ``stage``, or None."""
    entries = [s for s in record["stage_answers"] if s["stage"] == stage]
    return entries[-1] if entries else None


def was_retried(record: dict[str, Any]) -> bool:
    return "retry" in record["route"]


def write_subset(run: str, out: Path) -> None:
    loaded = load_run(run)
    config = json.loads((Path(run) / "config.json").read_text(encoding="utf-8"))
    retried = {r["qid"] for r in loaded.records if was_retried(r)}
    if not str(config["questions"]).endswith(".jsonl"):
        raise ValueError(f"{config['questions']}: --subset reads JSON Lines question files only")
    lines = Path(config["questions"]).read_text(encoding="utf-8").splitlines()
    kept = [x for x in lines if x.strip() and json.loads(x).get("qid") in retried]
    out.write_text("".join(x + "\n" for x in kept), encoding="utf-8")
    print(f"{len(kept)} of {len(loaded.records)} questions retried in {run}; written to {out}")


def row(name: str, records: list[dict[str, Any]]) -> None:
    changed = raised = lowered = answered = 0
    f_retry = f_cross = f_final = 0.0
    for r in records:
        gold = r["gold"] or []
        first, retry = after(r, "generate"), after(r, "retry")
        if first is None or retry is None:
            continue
        if (first["answer"], first["abstained"]) != (retry["answer"], retry["abstained"]):
            changed += 1
            delta = f1(retry, gold) - f1(first, gold)
            raised, lowered = raised + (delta > 0), lowered + (delta < 0)
        answered += not retry["abstained"]
        f_retry += f1(retry, gold)
        cross = after(r, "cross_check") or retry
        f_cross += f1(cross, gold)
        f_final += float(max_over_golds(token_f1, r["answer"], gold, abstained=r["abstained"]))
    n = len(records)
    print(f"| {name} | {n} | {changed} / {raised} / {lowered} | {answered} | "
          f"{f_retry / n:.3f} | {f_cross / n:.3f} | {f_final / n:.3f} |")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--unread", required=True, help="run with --retry-unread-first")
    ap.add_argument("--plain", help="run with --no-retry-unread-first")
    ap.add_argument("--subset", type=Path, help="write the questions --unread retried here")
    args = ap.parse_args()
    try:
        if args.subset:
            write_subset(args.unread, args.subset)
            return
        if not args.plain:
            raise SystemExit("error: give --plain RUN (or --subset FILE to write its questions)")
        unread = {r["qid"]: r for r in load_run(args.unread).records}
        plain = {r["qid"]: r for r in load_run(args.plain).records}
    except (KBQAError, OSError, ValueError, KeyError) as exc:
        raise SystemExit(f"error: {exc}") from None
    both = [q for q in unread if q in plain and was_retried(unread[q]) and was_retried(plain[q])]
    if not set(unread) & set(plain):
        raise SystemExit("error: the two runs have no question in common")
    if not both:
        raise SystemExit("error: no question was retried in both runs")
    same = sum(after(unread[q], "generate") == after(plain[q], "generate") for q in both)
    print(f"{len(both)} questions retried in both runs; first answer identical for {same}\n")
    print(
        "| retry | questions | changed / raised / lowered | answered after retry | "
        "F1 after retry | after cross-check | final |\n|---|---|---|---|---|---|---|"
    )
    for name, run in (("plain top k (HybridRAG-BN)", plain), ("unread first", unread)):
        row(name, [run[q] for q in both])


if __name__ == "__main__":
    main()
