"""Write a copy of a question file with zero-width characters typed inside its words, as
Bangla keyboards and copy-paste leave them (``বাংলা‌দেশ ব্যাং‌ক``), to measure retrieval and F1
on text as users send it. Nothing is scored here.

    python benchmarks/perturb_questions.py ../shared/data/bn/banglarqa_validation.qa.jsonl \\
        /tmp/banglarqa-zwnj.qa.jsonl --share 0.5 --seed 0

Each word of at least three letters gets, with probability ``--share``, one ``--char`` (ZWNJ,
U+200C, by default) at a random position strictly inside it, never before a vowel sign or after
a virama (where it would change the rendering rather than sit between letters). Write the copy
outside the repository: the data's licences forbid shipping it.
"""

from __future__ import annotations

import argparse
import json
import random
import unicodedata

from kbqa.evals.datasets import load_questions, question_to_dict


def perturb(question: str, rng: random.Random, share: float, char: str) -> str:
    words = []
    for word in question.split(" "):
        spots = [
            i for i in range(1, len(word))
            if word[i - 1].isalpha() and word[i].isalpha()
            and not unicodedata.category(word[i]).startswith("M") and word[i - 1] != "\u09cd"
        ]  # fmt: skip
        if len(word) >= 3 and spots and rng.random() < share:
            i = rng.choice(spots)
            word = word[:i] + char + word[i:]
        words.append(word)
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("questions")
    parser.add_argument("out")
    parser.add_argument("--share", type=float, default=0.5, help="share of words perturbed")
    parser.add_argument("--char", default="\u200c", help="the character typed (default ZWNJ)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    n = changed = 0
    with open(args.out, "w", encoding="utf-8") as fh:
        for q in load_questions(args.questions):
            row = question_to_dict(q)
            row["question"] = perturb(q.question, rng, args.share, args.char)
            changed += row["question"] != q.question
            n += 1
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{n} questions written to {args.out}; {changed} changed")


if __name__ == "__main__":
    main()
