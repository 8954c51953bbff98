"""finalize: shape the answer into a short span (:mod:`kbqa.answers.cleanup`), or give the
abstention phrase."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.cleanup import YES_NO_IN, drop_year_word, postprocess
from kbqa.answers.followup import topic_title
from kbqa.answers.snap import ground_answer, snap_to_context, snap_to_span
from kbqa.context import Context, context_of
from kbqa.nodes.common import node, on_route
from kbqa.passages import chunks_of
from kbqa.prompts import Passage
from kbqa.state import State, Turn
from kbqa.text import visible_text


def readable(text: str) -> str:
    """A passage's text as the reader read it (:class:`~kbqa.prompts.answer.Passage`)."""
    return Passage("", text).text


def answer_passages(state: State, ctx: Context) -> list[str]:
    """The texts the answer was read from, as the reader read them (:func:`readable`): web
    snippets for ``web_search``, else the prompt's chunks (``context_chunk_ids`` of the
    ``context_index`` sub-index: the precision one after fallback); ``[]`` when the index
    cannot be opened."""
    by = state.get("answered_by", "")
    if by == "web_search":
        return [readable(r.get("snippet", "")) for r in state.get("web_results", [])]
    try:
        sub_index = state.get("context_index") or None
        chunks = chunks_of(ctx, sub_index)
        ids = state.get("context_chunk_ids", [])
        if not ids and sub_index is None:
            ids = [r["chunk_id"] for r in state.get("retrieved", [])]
        return [readable(chunks[i].text) for i in ids if 0 <= i < len(chunks)]
    except Exception:  # no index (a graph run on state alone): nothing to snap to
        return []


@node("finalize")
def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Post-process the answer (:func:`~kbqa.answers.cleanup.postprocess`; with
    ``grounding="snap"`` the closest context span, :func:`~kbqa.answers.snap.snap_to_span`; then
    :func:`~kbqa.answers.snap.snap_to_context`), or give the abstention phrase of the
    question's language (:meth:`~kbqa.context.Context.abstention_for`). An answer that no
    passage it was read from holds (:func:`~kbqa.answers.snap.ground_answer`) becomes the
    abstention, and the route records ``finalize: ungrounded``. A grounded year loses its Bangla
    year word last (:func:`~kbqa.answers.cleanup.drop_year_word`)."""
    ctx = context_of(runtime)
    status = None
    answer = state.get("answer", "")
    abstained = bool(state.get("abstained", True)) or not answer
    if not abstained:
        titles = [s["title"] for s in state.get("sources", []) if s.get("title")]
        qtype = state.get("question_type", "other")
        answer = visible_text(postprocess(answer, qtype, titles, state.get("language")))
        passages = answer_passages(state, ctx)
        if ctx.grounding_mode == "snap" and answer.lower() not in YES_NO_IN["en"]:
            answer = snap_to_span(answer, passages)
        answer = snap_to_context(answer, qtype, passages)
        kept = ground_answer(answer, passages)
        if answer and not kept:
            status = "finalize: ungrounded"
        answer, abstained = drop_year_word(kept), not kept
    final = ctx.abstention_for(state.get("language")) if abstained else answer
    sources = state.get("sources", [])
    turn: Turn = {
        "question": state["question"],
        "asked": state.get("asked", ""),
        "answer": final,
        "abstained": abstained,
        "question_type": state.get("question_type", "other"),
        "title": "" if abstained else topic_title(state["question"], [s["title"] for s in sources]),
    }
    return {
        "answer": final,
        "history": [turn],
        "abstained": abstained,
        # a final abstention was produced by no stage: attribution counts it apart
        "answered_by": "abstained" if abstained else state.get("answered_by", "generate"),
        **on_route(status),
    }
