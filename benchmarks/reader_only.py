"""Reader-only accuracy: each answerable question with its gold passage given, so reading is
measured apart from retrieval. Prints one table row per reader; asserts nothing.

    python benchmarks/reader_only.py --questions ../shared/data/bn/banglarqa_validation.qa.jsonl \\
        --index index/bnwiki --n 60 --seed 0 --models gemma3-270m,gemma3-270m-reader

The gold passage is the first chunk of the question's document that holds a gold answer, with
the chunk before it (as the retriever's padding would add it), shown as the top hit. Questions
whose document holds no gold answer verbatim are skipped (counted). The answer goes through the
serving code: :func:`kbqa.answers.reading.generate_answer` (the same prompt, budget and
grounding), the abstention check and :func:`kbqa.answers.cleanup.postprocess` with the context
snapping of ``finalize``. ``--reader-adapter DIR`` serves an adapter of your own on the first
model. ``--cross-check auto|on`` puts each answer (or abstention) through the graph's
``cross_check`` rules that ``--cross-check-rules`` names (:func:`kbqa.answers.cross_check.decide`,
with the pattern extractor on the same passages; the graph's default is date) before that post-processing, as
the graph reads. Medians of seconds per
question; EM/F1 by the dataset's ``qtype``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from typing import Any

from kbqa.answers.abstention import judge
from kbqa.answers.cleanup import postprocess
from kbqa.answers.cross_check import applies, decide, parse_rules
from kbqa.answers.extract import extract_answer
from kbqa.answers.language import detect_language, question_type
from kbqa.answers.reading import generate_answer
from kbqa.answers.snap import snap_to_context, snap_to_span
from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.datasets import load_questions, select
from kbqa.evals.metrics import answer_in_context, exact_match, max_over_golds, token_f1
from kbqa.llm.grounding import DEFAULT_GROUNDING, GROUNDING_MODES
from kbqa.llm.models import load_chat_model
from kbqa.prompts import Passage
from kbqa.resources import load_retriever


def gold_passages(index: Any, doc_id: str, answers: list[str]) -> list[tuple[int, Passage]]:
    """The gold chunk (first chunk of ``doc_id`` holding an answer) after its previous chunk."""
    for chunk in index.chunks:
        if chunk.doc_id == doc_id and answer_in_context(answers, chunk.text):
            out = []
            if chunk.prev_chunk_id >= 0:
                prev = index.chunks[chunk.prev_chunk_id]
                out.append((1, Passage(prev.title, prev.text)))
            return [*out, (1, Passage(chunk.title, chunk.text))]
    return []


def run(
    model_name: str, ctx: Context, items: list[tuple[Any, list[tuple[int, Passage]]]]
) -> dict[str, Any]:
    model = load_chat_model(model_name, ctx.n_ctx, ctx.n_threads, adapter=ctx.reader_adapter)
    by_type: dict[str, list[tuple[float, float]]] = defaultdict(list)
    times, abstained_n = [], 0
    for q, passages in items:
        qtype, lang = question_type(q.question), detect_language(q.question)
        started = time.perf_counter()
        raw, *_ = generate_answer(
            model, ctx, q.question, passages, question_type=qtype, language=lang
        )
        answer, abstained = judge(raw, q.question, ctx.abstention_phrase, ctx.max_answer_chars)
        if applies(ctx.cross_check, lang):
            numbered = [(i, p.text) for i, (_, p) in enumerate(passages)]
            found = extract_answer(q.question, qtype, numbered, lang)
            answer, abstained, _ = decide(
                answer,
                abstained,
                found,
                ctx.abstention_phrase,
                qtype,
                rules=parse_rules(ctx.cross_check_rules),
            )
        times.append(time.perf_counter() - started)
        abstained_n += abstained
        if not abstained:
            texts = [p.text for _, p in passages]
            answer = postprocess(answer, qtype, [p.title for _, p in passages], lang)
            if ctx.grounding == "snap":
                answer = snap_to_span(answer, texts)
            answer = snap_to_context(answer, qtype, texts)
        f1 = max_over_golds(token_f1, answer, q.answers, abstained=abstained)
        em = max_over_golds(exact_match, answer, q.answers, abstained=abstained)
        by_type[q.qtype or "-"].append((em, f1))
        by_type["all"].append((em, f1))
    return {
        "model": model_name,
        "adapter": ctx.reader_adapter,
        "grounding": ctx.grounding,
        "n": len(items),
        "em": statistics.fmean(e for e, _ in by_type["all"]),
        "f1": statistics.fmean(f for _, f in by_type["all"]),
        "abstained": abstained_n / len(items),
        "median_s": statistics.median(times),
        "by_qtype": {
            t: {"n": len(v), "f1": statistics.fmean(f for _, f in v)} for t, v in by_type.items()
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--index", required=True)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="gemma3-270m,gemma3-270m-reader")
    ap.add_argument("--reader-adapter", default="", help="adapter for the first model")
    ap.add_argument("--grounding", default=DEFAULT_GROUNDING, choices=GROUNDING_MODES)
    ap.add_argument(
        "--cross-check",
        default="off",
        choices=("auto", "on", "off"),
        help="the graph's cross-check after the reader (default off: the reader alone)",
    )
    ap.add_argument(
        "--cross-check-rules",
        default="all",
        help="with --cross-check auto|on: the rules applied (default all; the graph's is date)",
    )
    ap.add_argument(
        "--exclude-sample",
        type=int,
        default=0,
        help="leave out the questions of `--sample N --seed 0` (a held-out draw)",
    )
    ap.add_argument(
        "--abstention-threshold",
        type=float,
        default=None,
        help="the first-token abstention rule (default: each reader's own)",
    )
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args()
    try:
        questions = [q for q in load_questions(args.questions) if q.answerable and q.doc_id]
        if args.exclude_sample:
            seen = {
                q.qid
                for q in select(load_questions(args.questions), sample=args.exclude_sample, seed=0)
            }
            questions = [q for q in questions if q.qid not in seen]
        questions = select(questions, sample=args.n, seed=args.seed)
        index = load_retriever(args.index, Context().embedder).index
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    items = [(q, gold_passages(index, q.doc_id, q.answers)) for q in questions]
    skipped = sum(1 for _, p in items if not p)
    items = [(q, p) for q, p in items if p]
    print(f"{len(items)} questions with a gold passage ({skipped} skipped: no answer verbatim)")
    print("| reader | grounding | n | EM | F1 | abstained | median s/question |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for i, name in enumerate(args.models.split(",")):
        ctx = Context(
            index_dir=args.index,
            model=name,
            grounding=args.grounding,
            cross_check=args.cross_check,
            cross_check_rules=args.cross_check_rules,
            abstention_threshold=args.abstention_threshold,
            web_search="off",
            reader_adapter=args.reader_adapter if i == 0 else "",
        )
        row = run(name, ctx, items)
        rows.append(row)
        label = name + (f" + {args.reader_adapter}" if row["adapter"] else "")
        label += f" + cross-check {args.cross_check}" if args.cross_check != "off" else ""
        print(
            f"| {label} | {row['grounding']} | {row['n']} | {row['em']:.3f} | {row['f1']:.3f} | "
            f"{row['abstained']:.3f} | {row['median_s']:.2f} |",
            flush=True,
        )
    for row in rows:
        types = ", ".join(
            f"{t} {v['f1']:.3f} (n={v['n']})" for t, v in sorted(row["by_qtype"].items())
        )
        print(f"{row['model']}: {types}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
