"""check_abstention: did the reader abstain? (:func:`kbqa.answers.abstention.judge`). Its
router (:func:`kbqa.routes.route_after_check`) sends an abstention to ``retry`` (bounded), then
on to the cross-check, the verifier, ``fallback`` and ``web_search`` (each when switched on).
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.nodes.common import judged, node, stage_answer
from kbqa.passages import chunk_sources, chunks_of
from kbqa.state import State


@node("check_abstention")
def check_abstention(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Judge ``raw_answer``: set ``answer``, ``abstained``, ``answered_by``, ``sources`` (the
    chunks the answer was read from; for an abstention under ``--reading each``, the chunks of
    every reading) and ``reader_answer`` (the same answer, which later stages leave as it is;
    "" when nothing was retrieved, so the reader was not asked), and record the stage's answer
    in ``stage_answers``."""
    ctx = context_of(runtime)
    answer, abstained = judged(state.get("raw_answer", ""), state, ctx)
    stage = "retry" if state.get("retries", 0) > 0 else "generate"
    read = state.get("context_chunk_ids", [])
    if abstained and state.get("readings"):  # --reading each: every hit read, not only one
        read = list(dict.fromkeys(c for r in state["readings"] for c in r["chunk_ids"]))
    return {
        "answer": answer,
        "abstained": abstained,
        "answered_by": stage,
        "reader_answer": answer if state.get("retrieved") else "",
        "sources": chunk_sources(chunks_of(ctx), state.get("retrieved", []), read),
        **stage_answer(stage, answer, abstained),
    }
