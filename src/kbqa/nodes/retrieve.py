"""retrieve: hybrid BM25 + dense search with weighted fusion and previous-chunk padding."""

from __future__ import annotations

import logging
import time
from typing import Any, Literal

from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.errors import ModelError
from kbqa.nodes._record import context_of, visited
from kbqa.resources import chat_model_for, retriever_for
from kbqa.state import RetrievedRecord, State

log = logging.getLogger("kbqa.retrieve")


def retrieve_records(
    question: str, k: int, ctx: Context, strategy: str | None = None
) -> list[RetrievedRecord]:
    """Run the shared retriever (of ``strategy``'s sub-index) with the context's fusion
    settings."""
    retriever = retriever_for(ctx, strategy)
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
    """First-pass retrieval with ``k`` chunks; ``retrieval_mode`` says whether dense vectors
    took part: ``hybrid``, ``bm25`` (an index without a dense part) or ``bm25 (dense pending)``
    (a BM25-first index waiting for ``kbqa index --continue``)."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    k = ctx.k
    retrieved = retrieve_records(state["question"], k, ctx)
    index = retriever_for(ctx).index
    if index.dense_pending:
        log.info("%s: dense part not built yet, BM25 alone", ctx.index_dir)
    mode = (
        "hybrid" if index.dense_ready else "bm25 (dense pending)" if index.dense_pending else "bm25"
    )
    return {
        "k": k,
        "retrieved": retrieved,
        "retrieval_mode": mode,
        **visited("retrieve", started),
    }


def route_after_retrieve(state: State, runtime: Runtime[Context]) -> Literal["generate", "extract"]:
    """``extract`` (no LLM) when ``use_llm`` is off or the model cannot be loaded (a missing
    package, a missing file); else ``generate``."""
    ctx = context_of(runtime)
    if not ctx.use_llm:
        return "extract"
    try:
        chat_model_for(ctx)
    except ModelError as exc:
        log.info("LLM unavailable, answering with the pattern extractor: %s", exc)
        return "extract"
    return "generate"
