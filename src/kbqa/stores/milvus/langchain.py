"""A kbqa Milvus store as a ``langchain_milvus.Milvus`` vector store, for LangChain code that
wants Milvus's own search API (filters, ``ranker_type``) over kbqa's collections.

Where langchain-milvus fits and where it does not:

- It fits the query side: its ``Milvus`` store opens an existing collection, embeds the query
  once per vector field and runs ``hybrid_search`` with a weighted or RRF ranker. kbqa supplies
  the two query embeddings: :class:`KbqaBM25QueryEmbedding` (a ``BaseSparseEmbedding``: the
  question's bm25s term ids, looked up in the store) and :class:`KbqaDenseEmbeddings` (the
  index's own query embedder).
- It does not fit writing: ``add_texts`` embeds documents with the given functions, but the
  BM25 sparse vectors are rows of bm25s's score matrix, which need the whole corpus (IDF,
  average length) and are copied from the built index (:func:`~.store.write_store`);
  langchain-milvus's own ``BM25BuiltInFunction`` would use Milvus's analyzer instead of kbqa's
  Bangla-correct tokenizer. Nor does it fit kbqa's retrieval: ``WeightedRanker`` normalises
  differently from kbqa's min-max fusion, and the graph needs each hit's previous chunk and
  kbqa's tie-breaking, so :class:`~.retriever.MilvusRetriever` calls pymilvus directly. For a
  LangChain retriever with kbqa's ranking, use
  :class:`kbqa.langchain_retriever.KBQARetriever` with a ``milvus://`` ``index_dir``.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_milvus.utils.sparse import BaseSparseEmbedding

from kbqa.stores.milvus.retriever import MilvusRetriever, open_milvus_retriever
from kbqa.stores.milvus.sparse import EMPTY_TERM
from kbqa.stores.milvus.uri import TOKEN_ENV


class KbqaBM25QueryEmbedding(BaseSparseEmbedding):
    """The BM25 query vector of a kbqa Milvus store (bm25s term id -> occurrences).

    Args:
        retriever: The store's retriever (its terms collection maps terms to ids).
    """

    def __init__(self, retriever: MilvusRetriever) -> None:
        self._retriever = retriever

    def embed_query(self, query: str) -> dict[int, float]:
        """The query's sparse vector; a query with no known term gets the one dimension no
        chunk matches through BM25 (Milvus refuses an empty sparse vector)."""
        return self._retriever.bm25_query(query) or {EMPTY_TERM: 1e-9}

    def embed_documents(self, texts: list[str]) -> list[dict[int, float]]:
        """Not available: a chunk's BM25 vector needs the whole corpus's statistics.

        Raises:
            NotImplementedError: Always; write chunks with ``kbqa index --store``.
        """
        raise NotImplementedError(
            "BM25 document vectors come from the built index (kbqa index --store), not from "
            "text alone"
        )


class KbqaDenseEmbeddings(Embeddings):
    """The store's query embedder as LangChain ``Embeddings`` (passages embedded the same way
    the index embedded them)."""

    def __init__(self, retriever: MilvusRetriever) -> None:
        if retriever.embedder is None:
            raise ValueError(f"{retriever.store} has no dense part (built with --embedder none)")
        self._embedder = retriever.embedder

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._embedder.embed_queries([text])[0]]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._embedder.embed_passages(texts)]


def langchain_vectorstore(location: str, strategy: str | None = None) -> Any:
    """``langchain_milvus.Milvus`` over one strategy's chunks collection of a kbqa store.

    Search it with Milvus's rankers: ``store.similarity_search_with_score(q, k=10,
    reranker=weighted)`` with ``weighted = pymilvus.Function(name="weighted",
    input_field_names=[], function_type=FunctionType.RERANK, params={"reranker": "weighted",
    "weights": [0.65, 0.35]})`` (the weights in the order BM25, dense).
    Documents carry the chunk's fields (``chunk_id``, ``doc_id``, ``title``...) as metadata.

    Raises:
        IndexLoadError: As :func:`~.retriever.open_milvus_retriever`.
    """
    from langchain_milvus import Milvus

    retriever = open_milvus_retriever(location, "", strategy)
    functions: list[Any] = [KbqaBM25QueryEmbedding(retriever)]
    fields = ["bm25"]
    params: list[dict[str, Any]] = [{"metric_type": "IP"}]
    if retriever.embedder is not None:
        functions.append(KbqaDenseEmbeddings(retriever))
        fields.append("dense")
        params.append({"metric_type": "IP"})
    return Milvus(
        embedding_function=functions if len(functions) > 1 else functions[0],
        collection_name=retriever.chunks_collection,
        connection_args={"uri": retriever.store.uri}
        if retriever.store.is_lite
        else {"uri": retriever.store.uri, "token": os.environ.get(TOKEN_ENV, "")},
        primary_field="chunk_id",
        text_field="text",
        vector_field=fields if len(fields) > 1 else fields[0],
        search_params=params if len(params) > 1 else params[0],
        consistency_level="Strong",
    )
