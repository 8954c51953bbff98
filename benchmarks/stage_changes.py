"""Skeleton vs full graph, and what each post-generation stage changed (HybridRAG-BN's "the
verifier changed 48 of 1,500 answers" accounting). Reads ``kbqa eval`` run directories; prints
tables; asserts nothing.

    python benchmarks/stage_changes.py --skeleton runs/bn-skel-gemma --full runs/bn-full-gemma

The skeleton run is ``--no-verify --no-fallback --web-search off`` on the same questions.
For each run: EM, F1 and abstention correctness (1 when it abstained exactly on the
unanswerable questions), over answerable and unanswerable questions apart. Then, in the full
run, every stage whose answer differs from the answer before it (from ``stage_answers``), with
whether the change raised, lowered or kept the question's F1 (an unanswerable question scores 1
when abstained, else 0).
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from kbqa.errors import KBQAError
from kbqa.evals.metrics import exact_match, max_over_golds, token_f1
from kbqa.evals.run_dir import load_run


def load(run: str) -> dict[str, dict[str, Any]]:
    """Records by ``qid`` (:func:`kbqa.evals.run_dir.load_run` checks each record's fields)."""
    return {r["qid"]: r for r in load_run(run).records}


def first_answer(record: dict[str, Any]) -> str | None:
    stages = record["stage_answers"]
    return str(stages[0]["answer"]) if stages else None


def f1(answer: str, abstained: bool, gold: list[str]) -> float:
    return float(max_over_golds(token_f1, answer, gold, abstained=abstained))


def table(name: str, records: list[dict[str, Any]]) -> None:
    for part, keep in (("answerable", True), ("unanswerable", False)):
        rows = [r for r in records if bool(r["answerable"]) == keep]
        if not rows:
            continue
        em = sum(max_over_golds(exact_match, r["answer"], r["gold"], abstained=r["abstained"])
                 for r in rows) / len(rows)  # fmt: skip
        f = sum(f1(r["answer"], r["abstained"], r["gold"]) for r in rows) / len(rows)
        ok = sum(r["abstained"] != keep for r in rows) / len(rows)
        print(f"| {name} | {part} ({len(rows)}) | {em:.3f} | {f:.3f} | {ok:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--skeleton", required=True)
    ap.add_argument("--full", required=True)
    args = ap.parse_args()
    try:
        skeleton, full = load(args.skeleton), load(args.full)
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    common = [q for q in full if q in skeleton]
    if not common:
        raise SystemExit(
            f"error: no question is in both runs ({len(skeleton)} skeleton records, "
            f"{len(full)} full records): compare runs of the same questions"
        )
    print(f"{len(common)} questions in both runs\n")
    print("| graph | questions | EM | F1 | abstention correct |\n|---|---|---|---|---|")
    table("skeleton", [skeleton[q] for q in common])
    table("full", [full[q] for q in common])

    same_first = sum(first_answer(skeleton[q]) == first_answer(full[q]) for q in common)
    print(f"\nfirst generation identical in both runs: {same_first} of {len(common)}")

    changed: Counter[tuple[str, str]] = Counter()
    reached: Counter[str] = Counter()
    for q in common:
        r = full[q]
        before: tuple[str, bool] | None = None
        for stage in r["stage_answers"]:
            now = (stage["answer"], bool(stage["abstained"]))
            reached[stage["stage"]] += 1
            if before is not None and now != before:
                delta = f1(*now, r["gold"]) - f1(*before, r["gold"])
                verdict = "helped" if delta > 1e-9 else "hurt" if delta < -1e-9 else "neutral"
                kind = (
                    "answer -> abstention" if now[1] and not before[1]
                    else "abstention -> answer" if before[1] and not now[1]
                    else "answer -> other answer"
                )  # fmt: skip
                changed[(f"{stage['stage']}: {kind}", verdict)] += 1
            before = now
    routes = Counter(
        "web: unavailable" if "web: unavailable" in r["route"] else r["answered_by"]
        for r in (full[q] for q in common)
    )
    print(f"stages run: {dict(reached)}; final answers by: {dict(routes)}\n")
    print("| change | helped | hurt | neutral |\n|---|---|---|---|")
    for kind in sorted({k for k, _ in changed}):
        print(f"| {kind} | {changed[(kind, 'helped')]} | {changed[(kind, 'hurt')]} | "
              f"{changed[(kind, 'neutral')]} |")  # fmt: skip


if __name__ == "__main__":
    main()
