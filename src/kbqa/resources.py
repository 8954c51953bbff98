"""The parts a run reads (retriever, reranker, reader, verifier, web search): handed in as
objects (:class:`Resources`, carried in :class:`~kbqa.context.Context`), or loaded once per
process from the settings' plain strings and shared.

Nodes take each part through one accessor (:func:`retriever_for`, :func:`reranker_for`,
:func:`chat_model_for`, :func:`verifier_for`, :func:`web_search_for`): a part the context's
``resources`` holds is used as it is; any other is loaded on first request and reused. Nothing
heavy is rebuilt per call, and tests hand fakes in as objects instead of patching loaders.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from kbqa.context_checks import Resources
from kbqa.embedders import load_embedder
from kbqa.errors import IndexLoadError
from kbqa.index import DENSE, has_strategy, load_index
from kbqa.llm.cache import names_gguf_file
from kbqa.llm.models import load_chat_model
from kbqa.retrieval.rerank import Reranker, load_reranker
from kbqa.retrieval.retriever import HybridRetriever, Retriever
from kbqa.stores.milvus.uri import is_milvus_uri

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from kbqa.context import Context
    from kbqa.web_search import WebSearch

__all__ = ["Resources"]  # defined beside the settings that carry it, used from here


def _given(ctx: Context) -> Resources:
    """The parts handed in through ``ctx.resources`` (none when it holds none)."""
    return ctx.resources or _NOTHING


_NOTHING = Resources()


@functools.cache
def load_retriever(index_dir: str, embedder: str, strategy: str | None = None) -> HybridRetriever:
    """Load an index and its query embedder once per (index_dir, embedder, strategy).

    Args:
        embedder: The query embedder (id or alias); it must be the index's. Empty: the index's
            own (from its manifest).
        strategy: The sub-index of a ``--strategy both`` directory (None: its default).

    Raises:
        IndexLoadError: Missing/corrupt index, no such strategy, or an index built with another
            embedder.
        ModelError: The embedder cannot be loaded.
    """
    from kbqa.embedders import resolve_embedder

    index = load_index(
        index_dir, embedder_id=resolve_embedder(embedder) if embedder else None, strategy=strategy
    )
    if index.dense is None:  # built BM25-first; `kbqa index --continue` adds the dense part
        return HybridRetriever(index, None)
    return HybridRetriever(
        index, load_embedder(index.embedder_id, for_queries=True, index_dir=str(index.path))
    )


@functools.cache
def load_milvus_retriever(location: str, embedder: str, strategy: str | None = None) -> Retriever:
    """Open a ``milvus://`` store once per (location, embedder, strategy)
    (:func:`kbqa.stores.milvus.open_milvus_retriever`).

    Raises:
        IndexLoadError: A bad URI, a store that does not exist, the Milvus extra not installed,
            no such strategy, or another embedder than the store's.
        ModelError: The embedder cannot be loaded.
    """
    from kbqa.stores.milvus import open_milvus_retriever

    return open_milvus_retriever(location, embedder, strategy)


def has_strategy_at(index_dir: str, strategy: str) -> bool:
    """``index_dir`` (a directory or a ``milvus://`` store) holds the sub-index ``strategy``."""
    if is_milvus_uri(index_dir):
        from kbqa.stores.milvus import store_has_strategy

        return store_has_strategy(index_dir, strategy)
    return has_strategy(index_dir, strategy)


def retriever_for(ctx: Context, strategy: str | None = None) -> Retriever:
    """The run's retriever: ``ctx.retriever`` when one was handed in, else the shared one loaded
    from ``ctx.index_dir`` (``strategy="precision"``: the fallback's sub-index); a
    ``milvus://`` ``index_dir`` opens a Milvus store (:func:`load_milvus_retriever`).

    A BM25-only retriever is reloaded once ``kbqa index --continue`` has added the index's dense
    part, so a long-running chat or server picks the dense vectors up.

    Raises:
        IndexLoadError: A sub-index (``strategy``) asked of a retriever handed in; see also
            :func:`load_retriever`.
    """
    handed = _given(ctx).precision_retriever if strategy == "precision" else None
    if handed is not None:
        return handed  # type: ignore[no-any-return]
    if _given(ctx).retriever is not None:
        if strategy is not None:  # never mix a handed-in knowledge base with index_dir's
            raise IndexLoadError(
                f"a retriever handed in through Context.resources has no {strategy!r} "
                "sub-index: hand in precision_retriever too"
            )
        return _given(ctx).retriever  # type: ignore[no-any-return]
    if ctx.retriever is not None:
        if strategy is not None:  # never mix a handed-in knowledge base with index_dir's
            raise IndexLoadError(
                f"a retriever handed in through Context has no {strategy!r} sub-index"
            )
        return ctx.retriever  # type: ignore[no-any-return]
    if is_milvus_uri(ctx.index_dir):  # a Milvus store (kbqa index --store milvus://...)
        return load_milvus_retriever(ctx.index_dir, ctx.embedder, strategy)
    retriever = load_retriever(ctx.index_dir, ctx.embedder, strategy)
    if not retriever.dense_ready and (retriever.index.path / DENSE).is_file():
        load_retriever.cache_clear()
        retriever = load_retriever(ctx.index_dir, ctx.embedder, strategy)
    return retriever


def reranker_for(ctx: Context, strategy: str | None = None) -> Reranker | None:
    """The run's reranker (``ctx.reranker``; None when off), loaded once per retriever: the
    lexical one takes its IDF from the retriever's index where the retriever offers
    ``term_idf``, else from the passages it scores; a ``kbqa finetune reranker`` directory
    loads its base and adapter in llama.cpp.

    Raises:
        ModelError: The reranker's model or adapter does not load.
    """
    if _given(ctx).reranker is not None:
        return _given(ctx).reranker  # type: ignore[no-any-return]
    if ctx.reranker == "off":
        return None
    retriever: Any = retriever_for(ctx, strategy)  # hashed by identity for the cache
    return _reranker(ctx.reranker, retriever, ctx.n_threads)


@functools.lru_cache(maxsize=8)
def _reranker(name: str, retriever: Any, n_threads: int) -> Reranker | None:
    from kbqa.llm.rerank import is_reranker_dir, load_llm_reranker

    if is_reranker_dir(name):  # kbqa finetune reranker's adapter directory
        return load_llm_reranker(name, n_threads=n_threads or None)
    from kbqa.embedders.bge import BGE_RERANKER, FlagCrossEncoder, is_bge_name

    if is_bge_name(name, BGE_RERANKER):  # the seed's reranker through FlagEmbedding
        return FlagCrossEncoder(name)
    if name.startswith("hf:"):  # a cross-encoder (bge-reranker-v2-m3, ...) from disk
        from kbqa.embedders.hf import CrossEncoderReranker

        return CrossEncoderReranker(name)
    return load_reranker(name, getattr(retriever, "term_idf", None))


def chat_model_for(ctx: Context, language: str | None = None) -> BaseChatModel:
    """The run's reader for a question in ``language`` (``bn``, ``en``; None: the default
    reader): the one handed in (``ctx.resources.reader``), else the shared chat model of the
    settings (:meth:`~kbqa.context.Context.reader_for`: ``model_en`` for English when set;
    behind ``ctx.llm_url`` when set)."""
    if _given(ctx).reader is not None:
        return _given(ctx).reader  # type: ignore[no-any-return]
    model, adapter = ctx.reader_for(language)
    if ctx.llm_url:  # the context refuses an English reader beside a server
        from kbqa.llm.server import load_server_chat_model

        return load_server_chat_model(
            ctx.llm_url, ctx.llm_model, model, adapter, ctx.n_ctx, ctx.llm_timeout
        )
    return load_chat_model(model, ctx.n_ctx, ctx.n_threads, adapter=adapter)


def routes_english(ctx: Context) -> bool:
    """English questions have a reader of their own (``model_en`` or ``reader_adapter_en``)."""
    return ctx.reader_for("en") != ctx.reader_for(None)


def verifier_name(ctx: Context) -> str:
    """The verifier model: ``ctx.verifier_model``, else the generator (with a verifier adapter,
    its base: the adapter is trained on it).

    Not whichever larger model is installed: every verifier measured on BanglaRQA validation
    lowered more answers than it raised (docs/finetune-log.md, every stage measured), and the
    generator costs the least time per question for it (a ``qwen2.5-coder-1.5b`` verifier took a
    median of 23.6 s a question against 3.0 s without one)."""
    return ctx.verifier_model or ctx.model


def verifier_for(ctx: Context) -> BaseChatModel:
    """The shared verifier model for a run's context, with ``ctx.verifier_adapter`` when given
    (a separate llama.cpp instance from the reader's, sharing the memory-mapped base weights);
    behind ``ctx.llm_url`` when set, where the server must also serve the verifier model as
    ``ctx.llm_model``; the one handed in (``ctx.resources.verifier``) when there is one."""
    if _given(ctx).verifier is not None:
        return _given(ctx).verifier  # type: ignore[no-any-return]
    if ctx.llm_url:
        from kbqa.llm.server import load_server_chat_model

        return load_server_chat_model(
            ctx.llm_url,
            ctx.llm_model,
            verifier_name(ctx),
            ctx.verifier_adapter,
            ctx.n_ctx,
            ctx.llm_timeout,
            role="verifier",
        )
    return load_chat_model(
        verifier_name(ctx), ctx.n_ctx, ctx.n_threads, role="verifier", adapter=ctx.verifier_adapter
    )


def web_search_for(ctx: Context) -> WebSearch | None:
    """The run's web search: the one handed in (``ctx.resources.web_search``), else the one
    ``ctx.web_search`` names (None when off).

    Raises:
        WebSearchError: Unknown name or unreadable static file.
    """
    if _given(ctx).web_search is not None:
        return _given(ctx).web_search  # type: ignore[no-any-return]
    from kbqa.web_search import load_web_search

    return load_web_search(ctx.web_search)


def check_models(ctx: Context) -> None:
    """Fail fast on the reader and (when given) the verifier model names and adapters, without
    loading them; nothing when the LLM is off. A verifier given without ``verify`` is checked
    too: a misspelt name is an error either way.

    Raises:
        ModelError: An unknown model name, a missing ``.gguf`` or a bad adapter.
    """
    from kbqa.llm.models import check_model_name

    if not ctx.use_llm:
        return
    check_model_name(ctx.model, ctx.reader_adapter)
    if routes_english(ctx):
        check_model_name(*ctx.reader_for("en"))
    if ctx.verifier_model or ctx.verifier_adapter:
        check_model_name(verifier_name(ctx), ctx.verifier_adapter, "verifier")


def preload(ctx: Context) -> str | None:
    """Load the index, the reader and (when on) the verifier before the first question, so a
    bad path, a misspelt model name or a bad adapter is one error, said once.

    Returns:
        None, or why the reader could not load (llama-cpp-python or the model package not
        installed...): the graph then answers with the pattern extractor. A ``.gguf`` file
        named as the model that cannot load is an error instead.

    Raises:
        ValueError: A file a setting names is missing (:meth:`~kbqa.context.Context.check_paths`).
        IndexLoadError: The index cannot be loaded.
        ModelError: An unknown model name, a missing ``.gguf`` or a bad adapter; a ``.gguf``
            model, an English reader (``model_en``) or a verifier that cannot load.
    """
    from kbqa.errors import ModelError

    ctx.check_paths()
    retriever_for(ctx)
    if not ctx.use_llm:
        return None
    check_models(ctx)
    try:
        chat_model_for(ctx)
    except ModelError as exc:
        # a server that was asked for and is not there is an error, and so is a model file
        # the user named (a break-it trial: a corrupt .gguf only warned, and the extractor
        # answered); a registered model whose package is missing falls back
        if ctx.llm_url or names_gguf_file(ctx.model):
            raise
        return str(exc)
    if routes_english(ctx):  # asked for by name: one that cannot load is an error
        chat_model_for(ctx, "en")
    if ctx.verify:
        verifier_for(ctx)
    return None
