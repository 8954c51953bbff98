"""BM25 as sparse vectors: each chunk's row of bm25s's precomputed BM25 score matrix.

A Milvus inner product between a chunk's row and the query's term counts is the in-process
BM25 score (same float32 weights), so kbqa's own tokenizer (words and character 4-grams) decides
the terms, not Milvus's analyzer. Used by :mod:`.store` to write the ``bm25`` field.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from kbqa.errors import IndexLoadError

EMPTY_TERM = 2**31 - 1
"""Sparse dimension given to a chunk with no BM25 term (Milvus refuses an empty sparse vector);
no term id maps to it, so no query reaches it through BM25."""


def document_rows(bm25: Any) -> Iterator[tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]]:
    """Each document's row of bm25s's BM25 score matrix, in document order.

    bm25s stores the matrix by term (CSC: ``data``, ``indices`` = document ids, ``indptr`` per
    term id); this transposes it.

    Yields:
        ``(term_ids, weights)`` per document: int64 and float32 arrays of equal length.

    Raises:
        IndexLoadError: The index uses a BM25 variant with non-occurrence scores (BM25L,
            BM25+), which a sparse inner product cannot reproduce.
    """
    check_bm25(bm25)
    data = np.asarray(bm25.scores["data"], dtype=np.float32)
    docs = np.asarray(bm25.scores["indices"])
    indptr = np.asarray(bm25.scores["indptr"])
    n_docs = int(bm25.scores["num_docs"])
    terms = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    order = np.argsort(docs, kind="stable")
    bounds = np.searchsorted(docs[order], np.arange(n_docs + 1))
    for d in range(n_docs):
        sel = order[bounds[d] : bounds[d + 1]]
        yield terms[sel], data[sel]


def check_bm25(bm25: Any) -> None:
    """Refuse a BM25 variant with non-occurrence scores (BM25L, BM25+).

    Raises:
        IndexLoadError: It has them.
    """
    if getattr(bm25, "nonoccurrence_array", None) is not None:
        raise IndexLoadError(
            f"BM25 method {bm25.method!r} scores terms a document lacks; "
            "only the lucene/robertson/atire variants fit sparse vectors"
        )
