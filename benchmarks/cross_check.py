"""Replay the ``cross_check`` node over earlier ``kbqa eval`` runs: what it would have changed.

    python benchmarks/cross_check.py --run runs/bn300 --index index/bnwiki [--run ... --index ...]

For each run, the reader's first answer (the ``generate`` entry of ``stage_answers``) is checked
against the pattern extractor's span on the chunks the reader read (``context_chunk_ids``), with
the node's own rule (:func:`kbqa.nodes.cross_check.agrees`), so no LLM runs. Prints answerable
F1 before and after, how many answers it changed, raised and lowered, and the same by language;
asserts nothing. The run must have been made on ``--index`` (chunk ids are the index's).
Abstentions are left alone, as in the graph.
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from typing import Any

from kbqa.errors import KBQAError
from kbqa.evals.metrics import max_over_golds, token_f1
from kbqa.evals.runner import load_run
from kbqa.nodes.cross_check import agrees
from kbqa.nodes.extract import extract_answer
from kbqa.retrieval.index import load_index


def replay(run: str, index: str) -> None:
    chunks = load_index(index).chunks
    before: dict[str, list[float]] = defaultdict(list)
    after: dict[str, list[float]] = defaultdict(list)
    moved: dict[str, Counter[str]] = defaultdict(Counter)
    for r in load_run(run).records:
        if not r.get("answerable", True):
            continue
        first: dict[str, Any] = next(
            (s for s in r["stage_answers"] if s["stage"] == "generate"), {}
        )
        if not first:
            continue  # answered without the reader (extract)
        lang = r.get("language", "bn")
        f_before = max_over_golds(
            token_f1, first["answer"], r["gold"], abstained=first["abstained"]
        )
        answer = first["answer"]
        if not first["abstained"]:
            passages = [(c, chunks[c].text) for c in r.get("context_chunk_ids", [])]
            found = extract_answer(r["question"], r.get("question_type", "other"), passages, lang)
            if found and found.answer and not agrees(answer, found):
                answer = found.answer
        f_after = max_over_golds(token_f1, answer, r["gold"], abstained=first["abstained"])
        for key in (lang, "all"):
            before[key].append(f_before)
            after[key].append(f_after)
            if answer != first["answer"]:
                moved[key]["changed"] += 1
                moved[key]["raised" if f_after > f_before else "lowered" if f_after < f_before
                           else "same F1"] += 1  # fmt: skip
    print(f"\n{run} (index {index})")
    print("| language | answerable | F1 reader | F1 cross-checked | changed | raised | lowered |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(before, key=lambda k: (k == "all", k)):
        m = moved[key]
        print(f"| {key} | {len(before[key])} | {statistics.mean(before[key]):.3f} | "
              f"{statistics.mean(after[key]):.3f} | {m['changed']} | {m['raised']} | "
              f"{m['lowered']} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="kbqa eval run directory")
    parser.add_argument("--index", action="append", required=True, help="its index (same order)")
    args = parser.parse_args()
    if len(args.run) != len(args.index):
        parser.error("give one --index per --run")
    try:
        for run, index in zip(args.run, args.index, strict=True):
            replay(run, index)
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    main()
