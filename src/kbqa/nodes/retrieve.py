"""retrieve: hybrid BM25 + dense search with weighted fusion and previous-chunk padding."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import visited
from kbqa.resources import retriever_for
from kbqa.state import RetrievedRecord, State


def retrieve_records(question: str, k: int, ctx: Context) -> list[RetrievedRecord]:
    """Run the shared retriever with the context's fusion settings."""
    retriever = retriever_for(ctx)
    hits = retriever.retrieve(
        question,
        k,
        bm25_weight=ctx.bm25_weight,
        dense_weight=ctx.dense_weight,
        candidate_pool=ctx.candidate_pool,
        fusion=ctx.fusion,
        pad_previous=ctx.pad_previous,
    )
    chunks = retriever.index.chunks
    return [
        {
            "chunk_id": h.chunk_id,
            "doc_id": chunks[h.chunk_id].doc_id,
            "score": round(h.score, 6),
            "rank": h.rank,
            "is_padding": h.is_padding,
        }
        for h in hits
    ]


def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """First-pass retrieval with ``k`` chunks."""
    started = time.perf_counter()
    k = runtime.context.k
    return {
        "k": k,
        "retrieved": retrieve_records(state["question"], k, runtime.context),
        **visited("retrieve", started),
    }
