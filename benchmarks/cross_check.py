"""Replay the ``cross_check`` node over earlier ``kbqa eval`` runs: what it would have changed.

    python benchmarks/cross_check.py --run runs/bn300 --index index/bnwiki [--run ... --index ...]
        [--grid] [--ablate]

For each run, the answer the graph held when it reached the cross-check (the stage before the
``cross_check`` entry of ``stage_answers``, or the last stage of a run made without it) is put
through every rule of the node (:func:`kbqa.answers.cross_check.decide`, as
``--cross-check-rules all``; the default graph applies only ``date``, since 2026-12-07) with the pattern
extractor's span on the chunks the reader read (``context_chunk_ids``), so no LLM runs. Prints
answerable F1, unanswerable abstention and overall F1 before and after, how many answers it
changed, raised and lowered, for each language; ``--grid`` also prints the two coverage
thresholds against each other (Bangla questions), which is how :data:`~kbqa.answers.cross_check.ABSTAIN_BELOW` and :data:`~kbqa.answers.cross_check.ANSWER_FROM` were chosen;
``--ablate`` prints the Bangla figures with each rule of :data:`~kbqa.answers.cross_check.RULES`
left out, with none applied and with each alone, which is how a rule is re-chosen for a new reader (a rule
ships when leaving it out lowers both BanglaRQA samples and does not raise the natural set,
issue 32). Asserts nothing.
The run must have been made on ``--index`` (chunk ids are the index's).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa.answers.cross_check import ABSTAIN_BELOW, ANSWER_FROM, RULES, decide
from kbqa.answers.extract import Extraction, extract_answer
from kbqa.corpus.chunking import Chunk
from kbqa.errors import KBQAError
from kbqa.evals.metrics import max_over_golds, token_f1
from kbqa.evals.run_dir import CONFIG_FILE, index_identity, load_run
from kbqa.index import load_index
from kbqa.prompts import ABSTENTION_PHRASE


@dataclass
class Item:
    """One question as it reached the cross-check."""

    record: dict[str, Any]
    answer: str
    abstained: bool
    found: Extraction | None


def reached(record: dict[str, Any]) -> tuple[str, bool] | None:
    """The ``(answer, abstained)`` the graph held when it reached the cross-check, or None for a
    question the reader never answered (the extractor did: no LLM, or it failed)."""
    stages = record.get("stage_answers") or []
    if not any(s["stage"] in ("generate", "retry") for s in stages):
        return None
    at = next((i for i, s in enumerate(stages) if s["stage"] == "cross_check"), None)
    before = [s for s in stages[:at] if s["stage"] in ("generate", "retry")]
    return before[-1]["answer"], before[-1]["abstained"]


def same_index(run: str, index: str) -> None:
    """Raises KBQAError when ``run`` was made on another index than ``index`` (chunk ids are an
    index's own: read against another, they name other passages) or holds no record."""
    config = json.loads((Path(run) / CONFIG_FILE).read_text("utf-8")) if (
        Path(run) / CONFIG_FILE).is_file() else {}  # fmt: skip
    recorded, here = config.get("index"), index_identity(index)
    if recorded and here and recorded != here:
        made_on = config.get("context", {}).get("index_dir", "?")
        raise KBQAError(
            f"{run} was made on the index {made_on} (created {recorded.get('created')}, "
            f"{recorded.get('chunks')} chunks), not on {index} (created {here.get('created')}, "
            f"{here.get('chunks')} chunks): give the run's own index"
        )


def items(run: str, chunks: list[Chunk]) -> list[Item]:
    out = []
    records = load_run(run).records
    if not records:
        raise KBQAError(f"{run} holds no record to replay")
    for r in records:
        held = reached(r)
        if held is None:
            continue
        ids = r.get("context_chunk_ids", [])
        if any(not 0 <= c < len(chunks) for c in ids):
            raise KBQAError(f"{run}: {r.get('qid')} read chunk ids the index does not hold")
        passages = [(c, chunks[c].text) for c in ids]
        lang = r.get("language", "bn")
        found = extract_answer(r["question"], r.get("question_type", "other"), passages, lang)
        out.append(Item(r, held[0], held[1], found))
    return out


def qtype(item: Item) -> str:
    """The question type classify gave the item's question."""
    return str(item.record.get("question_type", "other"))


def scores(answer: str, abstained: bool, record: dict[str, Any]) -> float:
    """Token F1 for an answerable question; 1/0 for abstaining on an unanswerable one."""
    if not record.get("answerable", True):
        return float(abstained)
    return max_over_golds(token_f1, answer, record["gold"], abstained=abstained)


def summary(rows: list[tuple[Item, str, bool]]) -> tuple[float, float, float]:
    """``(answerable F1, unanswerable abstention, overall F1)`` of ``(item, answer, abstained)``."""
    answerable = [scores(a, ab, i.record) for i, a, ab in rows if i.record.get("answerable", True)]
    unanswerable = [float(ab) for i, _, ab in rows if not i.record.get("answerable", True)]
    mean = lambda xs: statistics.mean(xs) if xs else float("nan")  # noqa: E731
    return mean(answerable), mean(unanswerable), mean(answerable + unanswerable)


def moves(rows: list[tuple[Item, str, bool]]) -> Counter[str]:
    """How many ``(item, answer, abstained)`` differ from the answer that reached the node
    (``changed``), and of those how many scored higher, lower or the same."""
    moved: Counter[str] = Counter()
    for i, a1, ab1 in rows:
        if (a1, ab1) != (i.answer, i.abstained):
            moved["changed"] += 1
            s0, s1 = scores(i.answer, i.abstained, i.record), scores(a1, ab1, i.record)
            moved["raised" if s1 > s0 else "lowered" if s1 < s0 else "same"] += 1
    return moved


def ablation(bangla: list[Item]) -> None:
    """Print the Bangla figures with every rule, each rule left out, no rule applied, and each
    rule alone."""
    print("\nBangla, each rule left out (answerable F1 / unanswerable abstention / overall F1; "
          "changed, raised, lowered against the reader's own answers):")  # fmt: skip
    print("| rules | answerable F1 | unanswerable abstained | overall F1 | changed | raised "
          "| lowered |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    variants = [("all", RULES)] + [(f"without {r}", tuple(x for x in RULES if x != r))
                                   for r in RULES] + [("none", ())] + [
        (f"only {r}", (r,)) for r in RULES]  # fmt: skip
    for name, rules in variants:
        rows = [(i, *decide(i.answer, i.abstained, i.found, ABSTENTION_PHRASE, qtype(i),
                            rules=rules)[:2]) for i in bangla]  # fmt: skip
        moved = moves(rows)
        f, u, o = summary(rows)
        print(f"| {name} | {f:.3f} | {u:.1%} | {o:.3f} | {moved['changed']} | "
              f"{moved['raised']} | {moved['lowered']} |")  # fmt: skip


def replay(run: str, index: str, grid: bool, ablate: bool = False) -> None:
    same_index(run, index)
    todo = items(run, load_index(index).chunks)
    by_lang: dict[str, list[Item]] = defaultdict(list)
    for item in todo:
        for key in (item.record.get("language", "bn"), "all"):
            by_lang[key].append(item)
    print(f"\n{run} (index {index}; thresholds {ABSTAIN_BELOW} / {ANSWER_FROM})")
    print("| language | questions | answerable F1 | unanswerable abstained | overall F1 "
          "| changed | raised | lowered |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for key in sorted(by_lang, key=lambda k: (k == "all", k)):
        group = by_lang[key]
        before = [(i, i.answer, i.abstained) for i in group]
        after = [(i, *decide(i.answer, i.abstained, i.found, ABSTENTION_PHRASE, qtype(i))[:2])
                 for i in group]  # fmt: skip
        moved = moves(after)
        b, a = summary(before), summary(after)
        print(f"| {key} | {len(group)} | {b[0]:.3f} -> {a[0]:.3f} | {b[1]:.1%} -> {a[1]:.1%} "
              f"| {b[2]:.3f} -> {a[2]:.3f} | {moved['changed']} | {moved['raised']} "
              f"| {moved['lowered']} |")  # fmt: skip
    if ablate:
        ablation(by_lang.get("bn", []))
    if grid:
        bangla = by_lang.get("bn", [])
        print("\nBangla, answerable F1 / unanswerable abstention / overall F1 by threshold:")
        print("| abstain below \\ answer from | " + " | ".join(
            f"{h}" for h in (0.6, 0.7, 0.8, 0.9, "never")) + " |")  # fmt: skip
        print("|---" * 6 + "|")
        for low in (0.0, 0.3, 0.4, 0.5, 0.6):
            cells = []
            for high in (0.6, 0.7, 0.8, 0.9, 2.0):
                rows = []
                for i in bangla:
                    kept = decide(i.answer, i.abstained, i.found, ABSTENTION_PHRASE, qtype(i),
                                  abstain_below=low, answer_from=high)  # fmt: skip
                    rows.append((i, kept[0], kept[1]))
                f, u, o = summary(rows)
                cells.append(f"{f:.3f} / {u:.1%} / {o:.3f}")
            print(f"| {low} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="kbqa eval run directory")
    parser.add_argument("--index", action="append", required=True, help="its index (same order)")
    parser.add_argument("--grid", action="store_true", help="also the threshold grid")
    parser.add_argument("--ablate", action="store_true", help="also each rule left out")
    args = parser.parse_args()
    if len(args.run) != len(args.index):
        parser.error("give one --index per --run")
    try:
        for run, index in zip(args.run, args.index, strict=True):
            replay(run, index, args.grid, args.ablate)
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    main()
