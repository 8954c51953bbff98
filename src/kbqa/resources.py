"""Long-lived objects (indexes, embedders, GGUF models), loaded once per process and shared.

Nodes ask for them by the plain strings in :class:`~kbqa.context.Context`; the first request
loads, later ones reuse. Nothing heavy is rebuilt per call.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from kbqa.llm.models import load_chat_model
from kbqa.retrieval.embedders import load_embedder
from kbqa.retrieval.index import load_index
from kbqa.retrieval.retriever import HybridRetriever

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from kbqa.context import Context


@functools.cache
def load_retriever(index_dir: str, embedder: str) -> HybridRetriever:
    """Load an index and its query embedder once per (index_dir, embedder).

    Raises:
        IndexLoadError: Missing/corrupt index or an index built with another embedder.
        ModelError: The embedder cannot be loaded.
    """
    index = load_index(index_dir, embedder_id=embedder)
    return HybridRetriever(index, load_embedder(embedder, for_queries=True))


def retriever_for(ctx: Context) -> HybridRetriever:
    """The shared retriever for a run's context."""
    return load_retriever(ctx.index_dir, ctx.embedder)


def chat_model_for(ctx: Context) -> BaseChatModel:
    """The shared chat model for a run's context."""
    return load_chat_model(ctx.model, ctx.n_ctx, ctx.n_threads)
