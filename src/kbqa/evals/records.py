"""One question's record in a run's ``records.jsonl``: the question, what the graph did (every
output field but those :data:`NOT_RECORDED` names, each with why) and every evaluator's score.
:mod:`kbqa.evals.runner` writes them; :mod:`kbqa.evals.run_dir` reads them back."""

from __future__ import annotations

from typing import Any

from kbqa.context import Context
from kbqa.evals.datasets import Question
from kbqa.evals.evaluators import route_stages, score_all

NOT_RECORDED: dict[str, str] = {
    "question": "the record keeps the question as the data set words it",
    "asked": "the data set's question is asked as it is, never rewritten as a follow-up",
    "history": "one question a record: no thread",
    "retries": "the route says whether retry ran",
    "sources": "the record keeps the documents read (context_doc_ids) instead",
    "retrieved": "the record keeps its documents (retrieved_doc_ids) instead",
    "retrieval_mode": "the same for every question of a run: in summary.json",
    "verified_answer": "in stage_answers",
    "fallback_answer": "in stage_answers",
    "web_results": "the pages a search returned can be long; web_query and web_error say what ran",
}
"""Output fields (:class:`~kbqa.state.OutputState`) a record leaves out, each with why; every
other output field is recorded (:func:`recorded_fields`), so a field added to the state is
recorded without a list to keep by hand."""

RUNNER_FIELDS: dict[str, Any] = {"retrieved_doc_ids": [], "context_doc_ids": []}
"""Fields :func:`kbqa.evals.runner.run_question` adds to the graph's output for the record, with
their empty value."""


def recorded_fields() -> dict[str, Any]:
    """The output fields a record keeps, each with the value recorded when the output lacks it
    (the empty value of its type, as a new question starts from: :func:`~kbqa.state.
    per_question_reset`; None for one the reset leaves alone)."""
    from typing import get_type_hints

    from kbqa.state import OutputState, per_question_reset

    empty = per_question_reset()
    names = [n for n in get_type_hints(OutputState) if n not in NOT_RECORDED]
    return {
        **{
            n: empty.get(n, [] if n in ("route", "stage_answers", "timings") else None)
            for n in names
        },
        **RUNNER_FIELDS,
    }


def make_record(
    q: Question, outputs: dict[str, Any] | None, error: str | None, ctx: Context
) -> dict[str, Any]:
    """One question's record: the question, what the graph did, and every evaluator's score."""
    out = dict(outputs or {"answer": "", "abstained": False, "route": []})
    if error and "error" not in out:
        out["error"] = error
    rec: dict[str, Any] = {
        "qid": q.qid,
        "question": q.question,
        "gold": q.answers,
        "answerable": q.answerable,
        "gold_doc_id": q.doc_id,
        "qtype": q.qtype,
        **{name: out.get(name, empty) for name, empty in recorded_fields().items()},
        "answer": str(out.get("answer", "")),
        "abstained": bool(out.get("abstained")),
        # a question the graph could not run is wrong on every count, abstention included
        "scores": (
            {k: 0.0 for k in score_all(out, q.reference(), **route_stages(ctx))}
            if "error" in out
            else score_all(out, q.reference(), **route_stages(ctx))
        ),
        "seconds": round(float(out.get("graph_seconds", 0.0)), 4),
    }
    if "error" in out:
        rec["error"] = out["error"]
    return rec
