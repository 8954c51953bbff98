"""extract: answer without an LLM (:func:`kbqa.answers.extract.extract_answer`, the type-aware
RAG seed's pattern extractor); the graph's reader when no LLM is available or it failed."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.extract import extract_answer
from kbqa.context import Context, context_of
from kbqa.nodes.common import node
from kbqa.passages import chunk_sources, chunks_of
from kbqa.state import State


@node("extract")
def extract(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer from ``retrieved`` with :func:`~kbqa.answers.extract.extract_answer`; abstain when
    nothing matches."""
    ctx = context_of(runtime)
    chunks = chunks_of(ctx)
    records = state.get("retrieved", [])
    passages = [(r["chunk_id"], chunks[r["chunk_id"]].text) for r in records]
    found = extract_answer(
        state["question"],
        state.get("question_type", "other"),
        passages,
        state.get("language", "bn"),
    )
    answer = found.answer if found else ""
    by_id = {r["chunk_id"]: r for r in records}
    sources = chunk_sources(chunks, [by_id[found.chunk_id]], [found.chunk_id]) if found else []
    return {
        "sources": sources,
        "raw_answer": answer,
        "answer": answer or ctx.abstention_phrase,
        "abstained": not answer,
        "answered_by": "extract",
        "context_chunk_ids": [found.chunk_id] if found else [],
        "stage_answers": [
            {"stage": "extract", "answer": answer or ctx.abstention_phrase, "abstained": not answer}
        ],
    }
