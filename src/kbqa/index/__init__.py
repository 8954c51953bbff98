"""The on-disk index, in three steps: :mod:`~kbqa.index.build` (documents -> chunks ->
BM25, published at once), :mod:`~kbqa.index.dense` (the dense vectors, now or with
``kbqa index --continue``) and :mod:`~kbqa.index.load`; the layout, file names and
checks are in :mod:`~kbqa.index.store`."""

from kbqa.index.build import StrategyInput, build_index, build_indexes
from kbqa.index.dense import continue_index
from kbqa.index.load import load_index
from kbqa.index.store import (
    BM25_DIR,
    CHUNKS,
    DENSE,
    FORMAT_VERSION,
    MANIFEST,
    RECURRING_BLOCKS,
    BuildReport,
    ChunkIndex,
    bm25_terms,
    bm25_text,
    dense_text,
    has_strategy,
    is_index_dir,
    peak_rss_mib,
    source_sha256,
)

__all__ = [
    "BM25_DIR",
    "CHUNKS",
    "DENSE",
    "FORMAT_VERSION",
    "MANIFEST",
    "RECURRING_BLOCKS",
    "BuildReport",
    "ChunkIndex",
    "StrategyInput",
    "bm25_terms",
    "bm25_text",
    "build_index",
    "build_indexes",
    "continue_index",
    "dense_text",
    "has_strategy",
    "is_index_dir",
    "load_index",
    "peak_rss_mib",
    "source_sha256",
]
