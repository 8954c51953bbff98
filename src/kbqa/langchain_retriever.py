"""The hybrid retriever as a LangChain retriever, so a kbqa index drops into LangChain chains.

Example::

    from kbqa.langchain_retriever import KBQARetriever

    retriever = KBQARetriever(index_dir="index/bnwiki", k=3)
    for doc in retriever.invoke("কোন জাদুঘরে সারগনিক বিজয় ফলক আছে?"):
        print(doc.metadata["title"], doc.metadata["score"], doc.page_content[:80])
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, field_validator

from kbqa.retrieval.fusion import BM25_WEIGHT, DENSE_WEIGHT


class KBQARetriever(BaseRetriever):
    """BM25 + dense retrieval with weighted fusion over a ``kbqa index`` directory (or a
    ``milvus://`` store written by ``kbqa index --store``), the chunk before each hit added
    (HybridRAG-BN), as LangChain ``Document`` objects in prompt order.

    Each document's ``metadata`` holds ``doc_id``, ``title``, ``url``, ``chunk_id``, ``score``
    (fused, in [0, 1]; a padding chunk carries its hit's), ``rank`` (1-based, of the hit) and
    ``is_padding``. The index and its query embedder load once per process, shared with the
    graph (:func:`kbqa.resources.load_retriever`).

    Raises:
        IndexLoadError: On the first query, when ``index_dir`` is not a loadable index.
    """

    model_config = ConfigDict(extra="forbid")

    index_dir: str
    k: int = Field(default=3, gt=0)
    embedder: str = ""
    bm25_weight: float = Field(default=BM25_WEIGHT, ge=0)
    dense_weight: float = Field(default=DENSE_WEIGHT, ge=0)
    fusion: Literal["weighted", "rrf"] = "weighted"
    candidate_pool: int = Field(default=30, gt=0)
    pad_previous: bool = True

    @field_validator("index_dir", mode="before")
    @classmethod
    def _path(cls, value: Any) -> Any:
        """A ``Path`` is as good as a string."""
        return str(value) if isinstance(value, PurePath) else value

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        from kbqa.resources import load_milvus_retriever, load_retriever
        from kbqa.stores.milvus.uri import is_milvus_uri

        retriever = (
            load_milvus_retriever(self.index_dir, self.embedder)
            if is_milvus_uri(self.index_dir)
            else load_retriever(self.index_dir, self.embedder)
        )
        chunks = retriever.chunks
        hits = retriever.retrieve(
            query,
            int(kwargs.get("k", self.k)),
            bm25_weight=self.bm25_weight,
            dense_weight=self.dense_weight,
            candidate_pool=self.candidate_pool,
            fusion=self.fusion,
            pad_previous=self.pad_previous,
        )
        return [
            Document(
                page_content=chunks[h.chunk_id].text,
                metadata={
                    "doc_id": chunks[h.chunk_id].doc_id,
                    "title": chunks[h.chunk_id].title,
                    "url": chunks[h.chunk_id].url,
                    "chunk_id": h.chunk_id,
                    "score": h.score,
                    "rank": h.rank,
                    "is_padding": h.is_padding,
                },
            )
            for h in hits
        ]
