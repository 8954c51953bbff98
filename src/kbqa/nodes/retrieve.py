"""retrieve: hybrid BM25 + dense search with weighted fusion and previous-chunk padding."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.errors import ModelError
from kbqa.nodes.common import node
from kbqa.passages import retrieve_records
from kbqa.resources import chat_model_for, retriever_for
from kbqa.state import State

log = logging.getLogger("kbqa.retrieve")


@node("retrieve")
def retrieve(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """First-pass retrieval with ``k`` chunks; ``retrieval_mode`` says whether dense vectors
    took part (:attr:`~kbqa.retrieval.retriever.Retriever.mode`) and which reranker ran. With
    ``use_llm`` on, the reader is loaded here (once per process), and a reader that cannot be
    loaded (a missing package, a missing file) is recorded in ``llm_error``, so the router
    sends the question to the extractor."""
    ctx = context_of(runtime)
    retrieved = retrieve_records(state["question"], ctx.k, ctx)
    mode = retriever_for(ctx).mode
    if mode == "bm25 (dense pending)":
        log.info("%s: dense part not built yet, BM25 alone", ctx.index_dir)
    if ctx.reranker != "off":  # say which: the records' scores are the reranked ones
        mode = f"{mode} + rerank ({Path(ctx.reranker).name})"
    update: dict[str, Any] = {"retrieved": retrieved, "retrieval_mode": mode}
    if ctx.use_llm:
        try:
            chat_model_for(ctx, state.get("language"))  # classify has run: the question's reader
        except ModelError as exc:
            log.info("LLM unavailable, answering with the pattern extractor: %s", exc)
            update["llm_error"] = f"{type(exc).__name__}: {exc}"
    return update
