"""Precision and recall of the ``yes/no`` question type (:func:`kbqa.answers.language.question_type`)
against a question file's own labels. Prints a table and the misclassified questions; asserts
nothing.

    python benchmarks/yes_no_classifier.py ../shared/data/bn/banglarqa_validation.qa.jsonl

BanglaRQA labels its questions ``confirmation/yes/no`` (the positives here), ``factoid/...``,
``list/...`` and ``causal/...``. ``--show N`` prints up to N false positives and negatives.
"""

from __future__ import annotations

import argparse
from collections import Counter

from kbqa.answers.language import question_type
from kbqa.evals.datasets import load_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions")
    parser.add_argument("--positive", default="confirmation", help="qtype prefix of yes/no")
    parser.add_argument("--show", type=int, default=10)
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    wrong: dict[str, list[str]] = {"false positive": [], "false negative": []}
    for q in load_questions(args.questions):
        gold = (q.qtype or "").startswith(args.positive)
        said = question_type(q.question) == "yes/no"
        counts[f"{'t' if gold == said else 'f'}{'p' if said else 'n'}"] += 1
        if gold != said:
            wrong["false positive" if said else "false negative"].append(q.question)
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print("| questions | yes/no (gold) | said yes/no | precision | recall |")
    print("|---|---|---|---|---|")
    print(f"| {sum(counts.values())} | {tp + fn} | {tp + fp} | {precision:.3f} | {recall:.3f} |")
    for kind, qs in wrong.items():
        print(f"\n{kind} ({len(qs)}):")
        for text in qs[: args.show]:
            print("  ", text)


if __name__ == "__main__":
    main()
