"""Hybrid retrieval: BM25 (bm25s) + dense (multilingual-e5-small, FAISS), weighted-sum fusion."""

from kbqa.retrieval.fusion import min_max_normalize, weighted_fusion
from kbqa.retrieval.index import ChunkIndex, build_index, load_index
from kbqa.retrieval.retriever import HybridRetriever, RetrievedChunk
from kbqa.retrieval.tokenizer import tokenize

__all__ = [
    "ChunkIndex",
    "HybridRetriever",
    "RetrievedChunk",
    "build_index",
    "load_index",
    "min_max_normalize",
    "tokenize",
    "weighted_fusion",
]
