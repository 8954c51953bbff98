"""The pattern extractor's two Bangla rules, one at a time: answerable F1 without an LLM.

    python benchmarks/extractor.py --questions ../shared/data/bn/banglarqa_validation.qa.jsonl \
        --index DIR [--held-sample 300 --held-seed 1]

Each question is classified and retrieved as the graph does (``k`` chunks with their padding,
:func:`kbqa.passages.retrieve_records`), and :func:`kbqa.answers.extract.extract_answer`
reads those chunks. Rows switch the rules on in turn, from the extractor of 2026-12-02 morning:

- before: the longest run of words the question does not contain (at most 6), typed patterns
  searched in the 20 best sentences, a year with its case word (``১৯৭১ সালে``);
- + aligned span (:func:`~kbqa.answers.aligned.aligned_span`);
- + typed patterns in the best sentence only (Bangla; :data:`~kbqa.answers.extract.CONTACT_KINDS`
  aside);
- + the year alone (``১৯৭১``);
- + runs of up to :data:`~kbqa.answers.extract.MAX_SPAN_WORDS` words: the extractor as shipped.

Columns: the questions outside the held-out sample (where the rules were chosen) and the held-out
sample (``kbqa eval --sample N --seed S`` draws the same one). Prints answerable F1 and, for the
shipped extractor, F1 by the dataset's question type. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from contextlib import contextmanager
from typing import Any

import regex

from kbqa.answers.language import detect_language, question_type
from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.datasets import load_questions, select
from kbqa.evals.metrics import max_over_golds, token_f1
from kbqa.passages import retrieve_records
from kbqa.resources import retriever_for

# the module itself: kbqa.nodes exports a function of the same name
extract = sys.modules["kbqa.answers.extract"]


OLD_YEAR = regex.compile(
    r"(?<!\p{N})[0-9০-৯]{4}(?!\p{N})(?:\s*(?:সালে|সাল|খ্রিস্টাব্দে|খ্রিস্টাব্দ|খ্রিষ্টাব্দে|খ্রিষ্টাব্দ))?"
)
"""The year pattern before the bare year."""
RULES = ("aligned", "best sentence", "bare year", "long runs")


@contextmanager
def rules(on: int) -> Any:
    """Switch on the first ``on`` of :data:`RULES` (the others as before them), restoring the
    module afterwards."""
    saved = extract.aligned_span, extract.CONTACT_KINDS, extract.MAX_SPAN_WORDS
    saved_year = extract.PATTERNS["year"]
    if on < 1:
        extract.aligned_span = lambda *_args, **_kw: None
    if on < 2:  # every kind searched like a contact detail
        extract.CONTACT_KINDS = frozenset(extract.TYPE_PATTERNS) | {"other", "yes/no"}
    if on < 3:
        extract.PATTERNS["year"] = OLD_YEAR
    if on < 4:
        extract.MAX_SPAN_WORDS = 6
    try:
        yield
    finally:
        extract.aligned_span, extract.CONTACT_KINDS, extract.MAX_SPAN_WORDS = saved
        extract.PATTERNS["year"] = saved_year


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--held-sample", type=int, default=300)
    ap.add_argument("--held-seed", type=int, default=1)
    args = ap.parse_args()
    try:
        questions = [q for q in load_questions(args.questions) if q.answerable]
        held = {q.qid for q in select(load_questions(args.questions),
                                      sample=args.held_sample, seed=args.held_seed)}  # fmt: skip
        ctx = Context(index_dir=args.index, use_llm=False)
        chunks = retriever_for(ctx).index.chunks
        items = []
        for q in questions:
            ids = [r["chunk_id"] for r in retrieve_records(q.question, ctx.k, ctx)]
            items.append((q, [(c, chunks[c].text) for c in ids]))
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    n_held = sum(q.qid in held for q, _ in items)
    print(f"| extractor | answerable F1, outside the held-out sample ({len(items) - n_held}) "
          f"| held-out sample, seed {args.held_seed} ({n_held}) |")  # fmt: skip
    print("|---|---|---|")
    by_type: dict[str, list[float]] = defaultdict(list)
    labels = ("before", "+ aligned span", "+ typed patterns in the best sentence",
              "+ the year alone", "+ runs of up to 15 words (shipped)")  # fmt: skip
    for on, label in enumerate(labels):
        split: dict[bool, list[float]] = defaultdict(list)
        with rules(on):
            for q, passages in items:
                found = extract.extract_answer(q.question, question_type(q.question), passages,
                                               detect_language(q.question))  # fmt: skip
                answer = found.answer if found else ""
                f1 = max_over_golds(token_f1, answer, list(q.answers), abstained=not answer)
                split[q.qid in held].append(f1)
                if on == len(RULES):
                    by_type[(q.qtype or "-").split("/")[0]].append(f1)
        print(f"| {label} | {statistics.mean(split[False]):.3f} "
              f"| {statistics.mean(split[True]):.3f} |")  # fmt: skip
    print("\nshipped extractor, all answerable questions, by question type:")
    for name, f1s in sorted(by_type.items()):
        print(f"  {name}: {statistics.mean(f1s):.3f} ({len(f1s)})")


if __name__ == "__main__":
    main()
