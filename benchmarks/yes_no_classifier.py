"""Precision and recall of the ``yes/no`` question type (:func:`kbqa.answers.language.question_type`)
against a question file's own labels. Prints a table and the misclassified questions; asserts
nothing.

    python benchmarks/yes_no_classifier.py ../shared/data/bn/banglarqa_validation.qa.jsonl

BanglaRQA labels its questions ``confirmation/yes/no`` (the positives here), ``factoid/...``,
``list/...`` and ``causal/...``. A file whose rows carry a boolean ``yes_no`` (the project's own
``benchmarks/data/bn_ki.jsonl``: Bangla ``কি``/``কী`` questions, yes/no or *what*) is read with
that as the label instead:

    python benchmarks/yes_no_classifier.py benchmarks/data/bn_ki.jsonl

``--show N`` prints up to N false positives and negatives.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from kbqa.answers.language import question_type
from kbqa.evals.datasets import load_questions


def labelled(path: str, positive: str) -> list[tuple[str, bool]]:
    """``(question, is yes/no)`` from a file with a ``yes_no`` field, else from ``qtype``."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [json.loads(line) for line in lines]
    if rows and all("yes_no" in r for r in rows):
        return [(r["question"], bool(r["yes_no"])) for r in rows]
    return [(q.question, (q.qtype or "").startswith(positive)) for q in load_questions(path)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions")
    parser.add_argument("--positive", default="confirmation", help="qtype prefix of yes/no")
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    wrong: dict[str, list[str]] = {"false positive": [], "false negative": []}
    for question, gold in labelled(args.questions, args.positive):
        said = question_type(question) == "yes/no"
        counts[f"{'t' if gold == said else 'f'}{'p' if said else 'n'}"] += 1
        if gold != said:
            wrong["false positive" if said else "false negative"].append(question)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    accuracy = (tp + counts["tn"]) / max(sum(counts.values()), 1)
    print("| questions | yes/no (gold) | said yes/no | precision | recall | typed right |")
    print("|---|---|---|---|---|---|")
    print(
        f"| {sum(counts.values())} | {tp + fn} | {tp + fp} | {precision:.3f} | {recall:.3f} "
        f"| {accuracy:.3f} |"
    )
    for kind, qs in wrong.items():
        print(f"\n{kind} ({len(qs)}):")
        for text in qs[: args.show]:
            print("  ", text)


if __name__ == "__main__":
    main()
