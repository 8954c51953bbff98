"""Issue 32's acceptance figures for a reader, in one command: the ``kbqa eval`` runs it names,
then a table of each figure against its target. Runs that already hold every question are read,
not run again, so a stopped measurement goes on where it stopped (``kbqa eval --out`` continues).

    python benchmarks/reader_acceptance.py --out runs/acceptance/new --bn-index index/bnwiki \\
        --xquad-index index/xquad --cmu-index index/cmu --new-seed 5 \\
        [--baseline runs/acceptance/shipped] [--only banglarqa-s0,natural] -- --reader-adapter DIR

Everything after ``--`` goes to every ``kbqa eval`` (the reader, its threshold, ...); without it
the default graph runs. The sets (paths under ``KBQA_DATA_DIR``, default ``../shared/data``):

- BanglaRQA validation, samples of 300: seed 0, seed 1 disjoint from it, and ``--new-seed``
  (drawn after every choice was made) disjoint from both. The reader alone is the graph stopped
  after ``generate`` (:func:`kbqa.evals.summary.after_each_stage`), read from the same run.
- The natural Bangla set, its held-out second set (other pages, written after every choice) and
  the lexical traps (``benchmarks/data``): the Bangla traps over the
  Bangla KB index, the English ones over the XQuAD index (each half written to its own file in
  ``--out``).
- XQuAD-en (300, seed 0) and CMU LTI (100, seed 0).

``--baseline DIR`` (the same command's ``--out`` for today's default) adds the ratio of median
seconds a question (target: at most 1.2). Prints a markdown table; asserts nothing. A set whose
index is not given is skipped, and said so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbqa.errors import KBQAError
from kbqa.evals.run_dir import load_run
from kbqa.evals.summary import after_each_stage

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("KBQA_DATA_DIR", ROOT.parent / "shared" / "data"))
BANGLARQA = DATA / "bn" / "banglarqa_validation.qa.jsonl"


def sets(new_seed: int) -> list[tuple[str, Path, str, list[str]]]:
    """``(name, question file, index key, selection flags)`` of every set."""
    return [
        ("banglarqa-s0", BANGLARQA, "bn", ["--sample", "300", "--seed", "0"]),
        ("banglarqa-s1", BANGLARQA, "bn", ["--sample", "300", "--seed", "1", "--disjoint-from", "0"]),
        ("banglarqa-new", BANGLARQA, "bn",
         ["--sample", "300", "--seed", str(new_seed), "--disjoint-from", "0,1"]),
        ("natural", ROOT / "benchmarks" / "data" / "bn_natural.qa.jsonl", "bn", []),
        ("natural-heldout", ROOT / "benchmarks" / "data" / "bn_natural_heldout.qa.jsonl", "bn", []),
        ("traps-bn", Path("trap-bn"), "bn", []),
        ("traps-en", Path("trap-en"), "xquad", []),
        ("xquad", DATA / "en" / "xquad" / "qa.jsonl", "xquad", ["--sample", "300", "--seed", "0"]),
        ("cmu", DATA / "en" / "cmu_lti" / "qa.jsonl", "cmu", ["--sample", "100", "--seed", "0"]),
    ]  # fmt: skip


def trap_half(out: Path, prefix: str) -> Path:
    """The traps whose id starts with ``prefix`` (``trap-bn``, ``trap-en``), as a file in
    ``out``."""
    lines = (ROOT / "benchmarks" / "data" / "traps.qa.jsonl").read_text("utf-8").splitlines()
    path = out / f"{prefix}.qa.jsonl"
    path.write_text("".join(f"{x}\n" for x in lines if json.loads(x)["qid"].startswith(prefix)))
    return path


def run_set(
    name: str, questions: Path, index: str, flags: list[str], out: Path, extra: list[str]
) -> Path:
    """Run (or continue) ``kbqa eval`` for one set into ``out/name``."""
    run = out / name
    kbqa = str(Path(sys.executable).with_name("kbqa"))  # the console script beside this python
    cmd = [kbqa, "eval", str(questions), "--index", index, *flags, "--out", str(run), *extra]
    print(f"# {' '.join(cmd)}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return run


def figures(run: Path) -> dict[str, Any]:
    """The acceptance figures of one run directory."""
    loaded = load_run(run)
    s, stages = loaded.summary, after_each_stage(loaded.records)
    reader = next((r for r in stages if r["after"] == "generate"), None)
    return {
        "answerable_f1": s["token_f1_answerable"],
        "reader_answerable_f1": reader["token_f1_answerable"] if reader else None,
        "abstained_answerable": s["abstention_rate_answerable"],
        "abstained_unanswerable": s["abstention_rate_unanswerable"],
        "f1": s["token_f1"],
        "median_s": s["seconds_per_question_median"],
        "questions": s["questions"],
    }


Check = tuple[str, str, Callable[[dict[str, Any]], float | None], str, float]
CHECKS: list[Check] = [
    ("banglarqa-*", "reader alone, answerable F1", lambda f: f["reader_answerable_f1"], ">=", 0.55),
    ("banglarqa-*", "default graph, answerable F1", lambda f: f["answerable_f1"], ">=", 0.65),
    ("banglarqa-*", "abstained, answerable", lambda f: f["abstained_answerable"], "<=", 0.08),
    ("banglarqa-*", "abstained, unanswerable", lambda f: f["abstained_unanswerable"], ">=", 0.65),
    ("natural*", "answerable F1", lambda f: f["answerable_f1"], ">=", 0.60),
    ("natural*", "abstained, answerable", lambda f: f["abstained_answerable"], "<=", 0.10),
    ("natural*", "abstained, unanswerable", lambda f: f["abstained_unanswerable"], ">=", 0.60),
    ("traps-*", "abstained", lambda f: f["abstained_unanswerable"], ">=", 0.70),
    ("xquad", "F1", lambda f: f["f1"], ">=", 0.60),
    ("cmu", "F1", lambda f: f["f1"], ">=", 0.55),
]  # fmt: skip


def table(found: dict[str, dict[str, Any]], baseline: dict[str, dict[str, Any]]) -> str:
    """The markdown table of every check on every set measured."""
    rows = ["| set | figure | measured | target | met |", "|---|---|---|---|---|"]
    for pattern, label, get, op, target in CHECKS:
        for name, f in found.items():
            if not (name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1]))):
                continue
            value = get(f)
            if value is None:
                rows.append(f"| {name} | {label} | - | {op} {target} | - |")
                continue
            met = value >= target if op == ">=" else value <= target
            rows.append(
                f"| {name} | {label} | {value:.3f} | {op} {target} | {'yes' if met else 'no'} |"
            )
    ratios = [found[n]["median_s"] / baseline[n]["median_s"] for n in found if n in baseline]
    if ratios:
        ratio = statistics.median(ratios)
        rows.append(
            f"| all ({len(ratios)} sets) | median s, against the baseline (median of "
            f"ratios) | {ratio:.2f}x | <= 1.2x | {'yes' if ratio <= 1.2 else 'no'} |"
        )
    return "\n".join(rows)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, type=Path, help="a folder for the runs")
    ap.add_argument("--bn-index", default="", help="index of bn/bnwiki_kb.jsonl")
    ap.add_argument("--xquad-index", default="", help="index of en/xquad/kb.jsonl")
    ap.add_argument("--cmu-index", default="", help="index of en/cmu_lti/kb.jsonl")
    ap.add_argument("--new-seed", type=int, default=5, help="the sample drawn after the choices")
    ap.add_argument("--baseline", type=Path, help="--out of the same command for the baseline")
    ap.add_argument("--only", default="", help="comma-separated set names")
    ap.add_argument("eval_args", nargs=argparse.REMAINDER, help="-- then kbqa eval flags")
    args = ap.parse_args()
    extra = [a for a in args.eval_args if a != "--"]
    indexes = {"bn": args.bn_index, "xquad": args.xquad_index, "cmu": args.cmu_index}
    only = {s.strip() for s in args.only.split(",") if s.strip()}
    args.out.mkdir(parents=True, exist_ok=True)
    found: dict[str, dict[str, Any]] = {}
    try:
        for name, questions, key, flags in sets(args.new_seed):
            if only and name not in only:
                continue
            if not indexes[key]:
                print(f"# {name}: skipped (no --{key}-index)", file=sys.stderr)
                continue
            if name.startswith("traps-"):
                questions = trap_half(args.out, str(questions))
            found[name] = figures(run_set(name, questions, indexes[key], flags, args.out, extra))
        baseline = {
            n: figures(args.baseline / n) for n in found if args.baseline and (args.baseline / n).is_dir()
        }  # fmt: skip
    except (KBQAError, subprocess.CalledProcessError) as exc:
        raise SystemExit(f"error: {exc}") from None
    print(table(found, baseline))


if __name__ == "__main__":
    main()
