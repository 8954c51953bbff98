"""finalize: shape the answer into a short span (:mod:`kbqa.answers.cleanup`), or give the
abstention phrase."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.cleanup import YES_NO_IN, postprocess
from kbqa.answers.snap import snap_to_context, snap_to_span
from kbqa.context import Context
from kbqa.nodes.common import chunks_of, context_of, visited
from kbqa.state import State


def answer_passages(state: State, ctx: Context) -> list[str]:
    """The texts the answer was read from: web snippets for ``web_search``, the precision
    index's cited chunks for ``fallback``, else the prompt's chunks of the primary index; ``[]``
    when the index cannot be opened."""
    by = state.get("answered_by", "")
    if by == "web_search":
        return [r.get("snippet", "") for r in state.get("web_results", [])]
    try:
        if by == "fallback":
            chunks = chunks_of(ctx, "precision")
            ids = [s["chunk_id"] for s in state.get("sources", [])]
        else:
            chunks = chunks_of(ctx)
            ids = state.get("context_chunk_ids") or [
                r["chunk_id"] for r in state.get("retrieved", [])
            ]
        return [chunks[i].text for i in ids if 0 <= i < len(chunks)]
    except Exception:  # no index (a graph run on state alone): nothing to snap to
        return []


def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Post-process the answer (:func:`~kbqa.answers.cleanup.postprocess`; with
    ``grounding="snap"`` the closest context span, :func:`~kbqa.answers.snap.snap_to_span`; then
    :func:`~kbqa.answers.snap.snap_to_context`), or give the abstention phrase."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    answer = state.get("answer", "")
    abstained = bool(state.get("abstained", True)) or not answer
    if not abstained:
        titles = [s["title"] for s in state.get("sources", []) if s.get("title")]
        qtype = state.get("question_type", "other")
        answer = postprocess(answer, qtype, titles, state.get("language"))
        passages = answer_passages(state, ctx)
        if ctx.grounding == "snap" and answer.lower() not in YES_NO_IN["en"]:
            answer = snap_to_span(answer, passages)
        answer = snap_to_context(answer, qtype, passages)
        abstained = not answer
    return {
        "answer": ctx.abstention_phrase if abstained else answer,
        "abstained": abstained,
        # a final abstention was produced by no stage: attribution counts it apart
        "answered_by": "abstained" if abstained else state.get("answered_by", "generate"),
        **visited("finalize", started),
    }
