"""A Milvus copy of a kbqa index (Milvus Lite, a local folder, or a Milvus server or cluster):
:func:`write_store` writes one from a built index, :func:`open_milvus_retriever` searches it.

Needs the optional extra ``kbqa[milvus]`` (pymilvus, milvus-lite); nothing here imports pymilvus
until a store is opened or written. See ``docs/milvus.md``.
"""

from kbqa.stores.milvus.retriever import (
    MilvusChunks,
    MilvusRetriever,
    open_milvus_retriever,
    store_has_strategy,
)
from kbqa.stores.milvus.store import write_store
from kbqa.stores.milvus.uri import (
    DEFAULT_COLLECTION,
    MilvusStore,
    is_milvus_uri,
    parse_store_uri,
)

__all__ = [
    "DEFAULT_COLLECTION",
    "MilvusChunks",
    "MilvusRetriever",
    "MilvusStore",
    "is_milvus_uri",
    "open_milvus_retriever",
    "parse_store_uri",
    "store_has_strategy",
    "write_store",
]
