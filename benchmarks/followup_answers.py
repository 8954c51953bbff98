"""Follow-ups answered (issue 36 item 3): two-turn conversations over the Bangla and the English
knowledge base, scored on the rewrite and on the answer.

Each conversation of ``benchmarks/data/followup_conversations.jsonl`` is made of two questions
people wrote about one page (BanglaRQA validation, XQuAD), the second of which names what the
first asks about; the file holds their ids, that name (``mention``) and the pronoun a person
would say instead, never question text (the questions are read from ``../shared/data``). Each
follow-up is asked three ways:

- **thread**: the first question, then the follow-up with the pronoun in the same thread (the
  graph rewrites it into a standalone question, :mod:`kbqa.answers.followup`);
- **alone**: the follow-up on its own, no thread (the baseline: nothing to resolve it with);
- **written**: the second question as its author wrote it (the ceiling: the name is there).

Printed per language: the rewrite right (the rewritten follow-up names the entity, one of
``entity``), the question type kept, the follow-up's token F1 each way (all answerable: an
abstention scores 0) with thread/alone and thread/written ratios, and abstentions. The rules of
the rewrite were not changed after this set was written.

    python benchmarks/followup_answers.py --index-bn index/bnwiki --index-en index/xquad
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kbqa.answers.language import question_type
from kbqa.evals.datasets import load_questions
from kbqa.evals.metrics import max_over_golds, token_f1

HERE = Path(__file__).resolve().parent
CONVERSATIONS = HERE / "data" / "followup_conversations.jsonl"
QUESTIONS = {"bn": Path("bn/banglarqa_validation.qa.jsonl"), "en": Path("en/xquad/qa.jsonl")}


def data_dir() -> Path:
    found = Path(os.environ.get("KBQA_DATA_DIR") or HERE.parent.parent / "shared" / "data")
    if not found.is_dir():
        sys.exit(f"data not found at {found}: set KBQA_DATA_DIR")
    return found


def conversations(data: Path) -> list[dict[str, Any]]:
    """The conversations with their questions and gold answers read from ``data``."""
    questions = {
        lang: {q.qid: q for q in load_questions(data / p)} for lang, p in QUESTIONS.items()
    }
    rows = []
    for line in CONVERSATIONS.read_text(encoding="utf-8").splitlines():
        c = json.loads(line)
        first, second = questions[c["language"]][c["first"]], questions[c["language"]][c["second"]]
        assert c["mention"] in second.question, c["id"]
        followup = second.question.replace(c["mention"], c["pronoun"], 1)
        rows.append(
            {
                **c,
                "q1": first.question,
                "written": second.question,
                "followup": followup,
                "answers": list(second.answers),
            }
        )
    return rows


def f1(answer: Any, golds: list[str]) -> float:
    return max_over_golds(token_f1, answer.answer, golds, abstained=answer.abstained)


def run(rows: list[dict[str, Any]], index: str, settings: dict[str, Any]) -> list[dict[str, Any]]:
    from langgraph.checkpoint.memory import InMemorySaver

    from kbqa.api import KBQA

    threaded = KBQA.from_index(index, checkpointer=InMemorySaver(), **settings)
    single = KBQA.from_index(index, **settings)
    out = []
    for c in rows:
        started = time.perf_counter()
        threaded.ask(c["q1"], thread_id=c["id"])
        thread = threaded.ask(c["followup"], thread_id=c["id"])
        alone, written = single.ask(c["followup"]), single.ask(c["written"])
        rewritten = str(thread.output.get("question", ""))
        row = {
            "id": c["id"],
            "followup": c["followup"],
            "rewritten": rewritten,
            "rewrite_right": rewritten != c["followup"]
            and any(e in rewritten for e in c["entity"]),
            "type_kept": question_type(c["followup"]) in ("other", question_type(rewritten)),
            **{
                f"{name}_answer": a.answer
                for name, a in (("thread", thread), ("alone", alone), ("written", written))
            },
            **{
                f"{name}_f1": f1(a, c["answers"])
                for name, a in (("thread", thread), ("alone", alone), ("written", written))
            },
            **{
                f"{name}_abstained": a.abstained
                for name, a in (("thread", thread), ("alone", alone), ("written", written))
            },
            "gold": c["answers"],
            "seconds": round(time.perf_counter() - started, 1),
        }
        out.append(row)
        print(
            f"{c['id']}: {'ok ' if row['rewrite_right'] else 'BAD'} {c['followup']!r} -> "
            f"{rewritten!r}; thread {thread.answer!r} ({row['thread_f1']:.2f}), alone "
            f"{alone.answer!r} ({row['alone_f1']:.2f}), written {written.answer!r} "
            f"({row['written_f1']:.2f}); gold {c['answers'][:2]}",
            flush=True,
        )
    return out


def summary(rows: list[dict[str, Any]], name: str) -> None:
    n = len(rows)
    mean = {w: statistics.fmean(r[f"{w}_f1"] for r in rows) for w in ("thread", "alone", "written")}
    ratio = {w: mean["thread"] / mean[w] if mean[w] else float("nan") for w in ("alone", "written")}
    print(f"\n{name} ({n} conversations)")
    print(f"  rewrite right        {sum(r['rewrite_right'] for r in rows)} of {n}")
    print(f"  question type kept   {sum(r['type_kept'] for r in rows)} of {n}")
    for w in ("thread", "alone", "written"):
        abstained = sum(r[f"{w}_abstained"] for r in rows)
        print(f"  F1 {w:<8}          {mean[w]:.3f}  (abstained {abstained} of {n})")
    print(f"  thread / alone       {ratio['alone']:.2f}x")
    print(f"  thread / written     {ratio['written']:.2f}x")
    print(
        f"  seconds per conversation (3 asks + the first turn), median "
        f"{statistics.median(r['seconds'] for r in rows):.1f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--index-bn", default="index/bnwiki", help="index of bn/bnwiki_kb.jsonl")
    ap.add_argument("--index-en", default="index/xquad", help="index of en/xquad/kb.jsonl")
    ap.add_argument("--language", choices=["bn", "en", "both"], default="both")
    ap.add_argument("--limit", type=int, default=0, help="first N conversations per language")
    ap.add_argument("--out", help="write every row as JSON Lines here")
    ap.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a kbqa.context.Context setting, e.g. --setting verify=true",
    )
    args = ap.parse_args()
    settings = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.setting)}
    rows = conversations(data_dir())
    everything = []
    for lang in ("bn", "en") if args.language == "both" else (args.language,):
        mine = [r for r in rows if r["language"] == lang][: args.limit or None]
        index = args.index_bn if lang == "bn" else args.index_en
        done = run(mine, index, settings)
        summary(done, {"bn": "Bangla", "en": "English"}[lang])
        everything += done
    if args.out:
        Path(args.out).write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in everything), "utf-8"
        )


if __name__ == "__main__":
    main()
