"""Run the graph over a question file and score it.

Question file format (``shared/data``): JSON Lines with ``qid``, ``question``, ``answers`` (list of
alternatives), ``doc_id``, ``answerable``, optional ``qtype``.
"""

from __future__ import annotations

import json
import logging
import os
import random
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa.context import Context
from kbqa.corpus.loaders import read_jsonl_objects
from kbqa.errors import InputError, KBQAError
from kbqa.evals.metrics import answer_in_context, exact_match, max_over_golds, recall_at_k, token_f1
from kbqa.resources import retriever_for

RECALL_KS = (1, 3, 10)
log = logging.getLogger("kbqa.evals")


@dataclass(frozen=True, slots=True)
class Question:
    """One evaluation question."""

    qid: str
    question: str
    answers: list[str]
    doc_id: str | None = None
    answerable: bool = True
    qtype: str | None = None


def load_questions(path: str | Path) -> list[Question]:
    """Read and validate a question file.

    Raises:
        InputError: Missing file, a line that is not UTF-8 / JSON / an object, or a field of the
            wrong type: ``question`` not a non-empty string, ``answers`` not a list of strings,
            ``answerable`` not a boolean, an answerable question without answers. The message
            names file and line.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"question file not found: {p}")
    out = [_parse_question(obj, p, lineno) for lineno, obj in read_jsonl_objects(p)]
    if not out:
        raise InputError(f"{p}: no questions")
    return out


def _parse_question(obj: dict[str, Any] | InputError, p: Path, lineno: int) -> Question:
    if isinstance(obj, InputError):
        raise obj
    where = f"{p}:{lineno}"
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: 'question' must be a non-empty string")
    answers = obj.get("answers", [])
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InputError(f"{where}: 'answers' must be a list of strings, got {answers!r:.80}")
    answerable = obj.get("answerable", bool(answers))
    if not isinstance(answerable, bool):
        raise InputError(f"{where}: 'answerable' must be true or false, got {answerable!r}")
    if answerable and not [a for a in answers if a.strip()]:
        raise InputError(f"{where}: answerable question has no answers")
    doc_id = obj.get("doc_id")
    return Question(
        qid=str(obj.get("qid") or f"{p.name}:{lineno}"),
        question=question,
        answers=answers if answerable else [],
        doc_id=None if doc_id is None else str(doc_id),
        answerable=answerable,
        qtype=None if obj.get("qtype") is None else str(obj.get("qtype")),
    )


def select(
    questions: list[Question], *, limit: int | None = None, sample: int | None = None, seed: int = 0
) -> list[Question]:
    """A seeded random sample (``sample``), then the first ``limit``."""
    if sample is not None and sample < len(questions):
        questions = random.Random(seed).sample(questions, sample)
    return questions[:limit] if limit is not None else questions


@dataclass
class EvalResult:
    """Per-question records and the summary."""

    records: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def score_record(
    q: Question, out: dict[str, Any], retrieved_docs: list[str], context_text: str, seconds: float
) -> dict[str, Any]:
    """One question's record: answer, route, metrics and timings."""
    abstained = bool(out.get("abstained"))
    answer = str(out.get("answer", ""))
    timings = out.get("timings", [])
    llm_s = sum(t["seconds"] for t in timings if t["node"] == "generate")
    retr_s = sum(t["seconds"] for t in timings if t["node"] in ("retrieve", "retry"))
    rec: dict[str, Any] = {
        "qid": q.qid,
        "question": q.question,
        "gold": q.answers,
        "answerable": q.answerable,
        "qtype": q.qtype,
        "answer": answer,
        "abstained": abstained,
        "route": out.get("route", []),
        "answered_by": out.get("answered_by"),
        "question_type": out.get("question_type"),
        "retrieved_doc_ids": retrieved_docs,
        "gold_doc_id": q.doc_id,
        "em": max_over_golds(exact_match, answer, q.answers, abstained=abstained),
        "f1": max_over_golds(token_f1, answer, q.answers, abstained=abstained),
        "seconds": seconds,
        "retrieval_seconds": retr_s,
        "llm_seconds": llm_s,
    }
    if "error" in out:
        rec["error"] = out["error"]
    if q.answerable:
        rec["answer_in_context"] = answer_in_context(q.answers, context_text)
        if q.doc_id:
            for k in RECALL_KS:
                rec[f"recall@{k}"] = recall_at_k(retrieved_docs, q.doc_id, k)
    return rec


def evaluate(questions: Iterable[Question], ctx: Context, *, progress: bool = True) -> EvalResult:
    """Run every question through the graph and score it.

    Doc-level recall@1/3/10 comes from a separate retrieval call with k=10 and the run's fusion
    settings (no padding); answer-in-context from the chunks the LLM was actually given.
    """
    from tqdm import tqdm

    from kbqa.graph import graph

    retriever = retriever_for(ctx)
    chunks = retriever.index.chunks
    result = EvalResult()
    qs = list(questions)
    for q in tqdm(qs, desc="eval", unit="q", disable=not progress):
        t0 = time.perf_counter()
        try:
            out = graph.invoke({"question": q.question}, context=ctx)
        except (KBQAError, ValueError) as exc:  # one bad question must not sink the run
            log.warning("question %s failed: %s", q.qid, exc)
            out = {"answer": "", "abstained": False, "route": [], "error": str(exc)}
        seconds = time.perf_counter() - t0
        hits = retriever.retrieve(
            q.question,
            max(RECALL_KS),
            bm25_weight=ctx.bm25_weight,
            dense_weight=ctx.dense_weight,
            candidate_pool=ctx.candidate_pool,
            fusion=ctx.fusion,
            pad_previous=False,
        )
        docs = [chunks[h.chunk_id].doc_id for h in hits]
        context_text = " ".join(chunks[c].text for c in out.get("context_chunk_ids", []))
        result.records.append(score_record(q, out, docs, context_text, seconds))
    result.summary = summarize(result.records, ctx)
    return result


def _mean(values: list[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None


def summarize(records: list[dict[str, Any]], ctx: Context | None = None) -> dict[str, Any]:
    """Aggregate records: EM/F1 (all, answerable), recall@k, answer-in-context, abstention rates,
    seconds per question (mean, median) and the retrieval/LLM split."""
    ans = [r for r in records if r["answerable"]]
    unans = [r for r in records if not r["answerable"]]
    summary: dict[str, Any] = {
        "questions": len(records),
        "answerable": len(ans),
        "unanswerable": len(unans),
        "em": _mean([r["em"] for r in records]),
        "f1": _mean([r["f1"] for r in records]),
        "em_answerable": _mean([r["em"] for r in ans]),
        "f1_answerable": _mean([r["f1"] for r in ans]),
    }
    for k in RECALL_KS:
        summary[f"recall@{k}"] = _mean([r[f"recall@{k}"] for r in ans if f"recall@{k}" in r])
    summary["answer_in_context"] = _mean([r["answer_in_context"] for r in ans])
    summary["abstention_rate_answerable"] = _mean([float(r["abstained"]) for r in ans])
    summary["abstention_rate_unanswerable"] = _mean([float(r["abstained"]) for r in unans])
    summary["retried"] = sum(1 for r in records if "retry" in r["route"])
    summary["errors"] = sum(1 for r in records if "error" in r)
    secs = [r["seconds"] for r in records]
    summary["seconds_per_question_mean"] = _mean(secs)
    summary["seconds_per_question_median"] = round(statistics.median(secs), 4) if secs else None
    summary["retrieval_seconds_median"] = (
        round(statistics.median(r["retrieval_seconds"] for r in records), 4) if records else None
    )
    summary["llm_seconds_median"] = (
        round(statistics.median(r["llm_seconds"] for r in records), 4) if records else None
    )
    if ctx is not None:
        summary["model"] = ctx.model
        summary["index_dir"] = ctx.index_dir
    return summary


def write_result(result: EvalResult, path: str | Path) -> None:
    """Write ``{"summary": ..., "records": [...]}`` as JSON, atomically."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(
            json.dumps(
                {"summary": result.summary, "records": result.records},
                ensure_ascii=False,
                indent=1,
            ),
            encoding="utf-8",
        )
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)


def check_writable(path: str | Path) -> Path:
    """Fail early (before a long run) when ``path`` cannot be written as a file.

    Raises:
        InputError: ``path`` is a directory, or its folder cannot be created or written.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"cannot write results to {p}: it is a directory")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write results to {p}: {exc.strerror or exc}") from None
    if not os.access(p.parent, os.W_OK):
        raise InputError(f"cannot write results to {p}: folder is not writable")
    return p


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as an aligned two-column table."""
    width = max(len(k) for k in summary)

    def show(value: Any) -> str:
        if value is None:
            return "n/a"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    return "\n".join(f"{k:<{width}}  {show(v)}" for k, v in summary.items())


__all__ = [
    "EvalResult",
    "Question",
    "evaluate",
    "format_summary",
    "load_questions",
    "select",
    "summarize",
    "write_result",
]
