"""Evaluators: plain functions ``(outputs, reference_outputs) -> {"key", "score"}``.

The signature is the one :func:`langsmith.evaluate` accepts, so the same functions score a local
run and an uploaded experiment. Evidence comes from the graph's **output** (answer, route,
retrieved doc ids, the context given to the LLM), never from child runs, which evaluators cannot
see (langsmith-sdk #1440).

``outputs`` (from :func:`kbqa.evals.runner.run_question`): ``answer``, ``abstained``, ``route``,
``retrieved_doc_ids`` (distinct documents of a top-10 retrieval), ``context_text``.
``reference_outputs``: ``answers`` (alternatives, empty if unanswerable), ``doc_id``,
``answerable`` and optionally ``route`` (an expected trajectory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kbqa.evals.metrics import (
    answer_contained,
    answer_spans_in_context,
    exact_match,
    max_over_golds,
    recall_at_k,
    token_f1,
)

EvaluatorResult = dict[str, Any]
Evaluator = Callable[[dict[str, Any], dict[str, Any]], EvaluatorResult]

RECALL_KS = (1, 3, 5, 10)
DIRECT_ROUTE = ("classify", "retrieve", "generate", "check_abstention", "finalize")
"""Trajectory of a question answered on the first pass."""


def _answer(outputs: dict[str, Any]) -> tuple[str, bool]:
    return str(outputs.get("answer") or ""), bool(outputs.get("abstained"))


def _score_answer(
    key: str,
    metric: Callable[[str, str], float],
    outputs: dict[str, Any],
    reference: dict[str, Any],
) -> EvaluatorResult:
    answer, abstained = _answer(outputs)
    golds = reference.get("answers") or []
    return {"key": key, "score": max_over_golds(metric, answer, golds, abstained=abstained)}


def exact_match_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``exact_match``: SQuAD EM, max over gold alternatives (1 if unanswerable and abstained)."""
    return _score_answer("exact_match", exact_match, outputs, reference_outputs)


def token_f1_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``token_f1``: SQuAD token F1 with Bangla normalisation, maximum over alternatives."""
    return _score_answer("token_f1", token_f1, outputs, reference_outputs)


def contained_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``answer_contained``: a normalised gold occurs inside the normalised answer (FlashRAG's
    "acc"; EM undercounts by about 16 points on NQ)."""
    return _score_answer("answer_contained", answer_contained, outputs, reference_outputs)


def abstention_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``abstention_correct``: 1 when it abstained exactly on the unanswerable questions."""
    _, abstained = _answer(outputs)
    answerable = bool(reference_outputs.get("answerable", True))
    return {"key": "abstention_correct", "score": float(abstained != answerable)}


def recall_evaluator(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> EvaluatorResult:
    """``recall@k`` for k in :data:`RECALL_KS`: the gold document among the top-k distinct
    retrieved documents, as ``{"results": [...]}``. Score None (not applicable) for unanswerable
    questions and questions without ``doc_id``."""
    gold = reference_outputs.get("doc_id")
    if not gold or not reference_outputs.get("answerable", True):
        return {"results": [{"key": f"recall@{k}", "score": None} for k in RECALL_KS]}
    docs: Sequence[str] = outputs.get("retrieved_doc_ids") or []
    return {
        "results": [{"key": f"recall@{k}", "score": recall_at_k(docs, gold, k)} for k in RECALL_KS]
    }


def answer_recall_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``answer_recall@k`` for k in :data:`RECALL_KS`: a gold answer occurs in the top-k fused
    chunks (``outputs["retrieved_texts"]``, ranked). Recall for knowledge bases whose questions
    name no gold document, such as website crawls; None for unanswerable questions or outputs
    without ``retrieved_texts``."""
    texts: Sequence[str] | None = outputs.get("retrieved_texts")
    golds = reference_outputs.get("answers") or []
    if texts is None or not golds or not reference_outputs.get("answerable", True):
        return {"results": [{"key": f"answer_recall@{k}", "score": None} for k in RECALL_KS]}
    return {
        "results": [
            {
                "key": f"answer_recall@{k}",
                "score": answer_spans_in_context(golds, "\n".join(texts[:k])),
            }
            for k in RECALL_KS
        ]
    }


def answer_in_context_evaluator(
    outputs: dict[str, Any], reference_outputs: dict[str, Any]
) -> EvaluatorResult:
    """``answer_in_context``: a gold answer occurs in the chunks the LLM was given, every span
    of a multi-span gold (:func:`~kbqa.evals.metrics.answer_spans_in_context`; score None for
    unanswerable and yes/no questions). Separates retrieval failures from reading failures
    (type-aware RAG seed)."""
    if not reference_outputs.get("answerable", True):
        return {"key": "answer_in_context", "score": None}
    golds = reference_outputs.get("answers") or []
    return {
        "key": "answer_in_context",
        "score": answer_spans_in_context(golds, outputs.get("context_text", "")),
    }


def route_stages(ctx: Any) -> dict[str, Any]:
    """The settings of a :class:`~kbqa.context.Context` that shape the route, as keyword
    arguments for :func:`expected_route`, :func:`trajectory_evaluator` and :func:`score_all`."""
    return {
        "max_retries": ctx.max_retries,
        "cross_check": ctx.cross_check != "off",
        "verify": ctx.verify,
        "fallback": ctx.fallback,
        "web_search": ctx.web_search != "off",
        "use_llm": ctx.use_llm,
    }


def expected_route(
    reference_outputs: dict[str, Any],
    max_retries: int = 1,
    *,
    cross_check: bool = False,
    verify: bool = False,
    fallback: bool = False,
    web_search: bool = False,
    use_llm: bool = True,
) -> list[str]:
    """The trajectory a question should take (node names only; status entries such as
    ``web: unavailable`` are not part of it).

    ``reference_outputs["route"]`` when given. Otherwise an answerable question is answered on
    the first pass (:data:`DIRECT_ROUTE`, then ``cross_check`` and ``verify`` when on), and an
    unanswerable one abstains through every retry, the cross-check, the verifier, the fallback
    and the web search that are on.
    Without an LLM, both go ``classify, retrieve, extract, finalize``.
    """
    if reference_outputs.get("route"):
        return list(reference_outputs["route"])
    head = list(DIRECT_ROUTE[:4])
    if not use_llm:
        return [*head[:2], "extract", "finalize"]
    if reference_outputs.get("answerable", True):
        return (
            head
            + (["cross_check"] if cross_check else [])
            + (["verify"] if verify else [])
            + ["finalize"]
        )
    tail = ["retry", "generate", "check_abstention"] * max_retries
    tail += ["cross_check"] if cross_check else []
    stages = [
        name
        for name, on in (("verify", verify), ("fallback", fallback), ("web_search", web_search))
        if on
    ]
    return head + tail + stages + ["finalize"]


def trajectory_evaluator(max_retries: int = 1, **stages: bool) -> Evaluator:
    """``trajectory``: 1 when the route the graph took (its node names) equals
    :func:`expected_route` (as in LangGraph's CRAG evaluation, which compares tool-call
    trajectories). ``stages``: ``cross_check``, ``verify``, ``fallback``, ``web_search``,
    ``use_llm``."""

    def trajectory(outputs: dict[str, Any], reference_outputs: dict[str, Any]) -> EvaluatorResult:
        route = [r for r in outputs.get("route") or [] if ": " not in r]
        expected = expected_route(reference_outputs, max_retries, **stages)
        return {"key": "trajectory", "score": float(route == expected)}

    return trajectory


def default_evaluators(max_retries: int = 1, **stages: bool) -> list[Callable[..., Any]]:
    """All evaluators of a ``kbqa eval`` run."""
    return [
        exact_match_evaluator,
        token_f1_evaluator,
        contained_evaluator,
        abstention_evaluator,
        recall_evaluator,
        answer_recall_evaluator,
        answer_in_context_evaluator,
        trajectory_evaluator(max_retries, **stages),
    ]


def score_all(
    outputs: dict[str, Any],
    reference_outputs: dict[str, Any],
    max_retries: int = 1,
    **stages: bool,
) -> dict[str, float]:
    """Every applicable evaluator's score by key, computed locally (what a run record stores)."""
    scores: dict[str, float] = {}
    for ev in default_evaluators(max_retries, **stages):
        res = ev(outputs, reference_outputs)
        for r in res.get("results", [res]):
            if r["score"] is not None:
                scores[r["key"]] = float(r["score"])
    return scores
