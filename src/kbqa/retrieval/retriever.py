"""Hybrid retriever: BM25 and dense search run independently, then weighted fusion and
previous-chunk padding (HybridRAG-BN adds the chunk before each hit as context)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from kbqa.corpus.chunking import Chunk
from kbqa.embedders import Embedder
from kbqa.index import ChunkIndex
from kbqa.retrieval.fusion import BM25_WEIGHT, DENSE_WEIGHT, reciprocal_rank_fusion, weighted_fusion
from kbqa.retrieval.rerank import bm25_idf
from kbqa.retrieval.tokenizer import TERMS_WORDS_NGRAMS, tokenize, with_ngrams

CANDIDATE_POOL = 30
"""Candidates each retriever contributes to fusion (at least k)."""


@dataclass(frozen=True, slots=True)
class RetrievedChunk:
    """A chunk given to the reader.

    Attributes:
        chunk_id: Row in the index.
        score: Fused score in [0, 1] for a hit; for a padding chunk, the score of its hit.
        rank: 1-based rank of the hit it belongs to.
        is_padding: True when the chunk was added as the previous chunk of a hit.
    """

    chunk_id: int
    score: float
    rank: int
    is_padding: bool = False


class Retriever(Protocol):
    """What the graph needs from retrieval (:class:`HybridRetriever` is the one kbqa builds):
    ranked chunks for a question, the chunks by id, and which retrieval ran."""

    @property
    def chunks(self) -> Sequence[Chunk]:
        """The index's chunks; a chunk's id is its position."""
        ...

    @property
    def mode(self) -> str:
        """``hybrid``, ``bm25`` or ``bm25 (dense pending)``."""
        ...

    def retrieve(
        self,
        query: str,
        k: int,
        *,
        bm25_weight: float = BM25_WEIGHT,
        dense_weight: float = DENSE_WEIGHT,
        candidate_pool: int = CANDIDATE_POOL,
        fusion: Literal["weighted", "rrf"] = "weighted",
        pad_previous: bool = True,
    ) -> list[RetrievedChunk]:
        """Ranked chunks in prompt order (see :meth:`HybridRetriever.retrieve`)."""
        ...


class HybridRetriever:
    """BM25 (bm25s) + dense (FAISS inner product) over one :class:`ChunkIndex`.

    An index whose dense part is still pending (built BM25-first, see ``kbqa index
    --continue``) is searched with BM25 alone; :attr:`dense_ready` says which.

    Args:
        index: The loaded index.
        embedder: Query embedder; must be the one the index was built with. None only for an
            index without its dense part.
        faiss_threads: OpenMP threads for FAISS search; 1 is fastest for a single query
            (measured 4x faster than 2 on a 2-core laptop).

    Raises:
        ValueError: The embedder's id or dimension differs from the index's.
    """

    def __init__(
        self, index: ChunkIndex, embedder: Embedder | None, faiss_threads: int = 1
    ) -> None:
        dim = index.dense.d if index.dense is not None else index.manifest.get("embedding_dim")
        if embedder is None:
            if index.dense is not None:
                raise ValueError("an index with dense vectors needs a query embedder")
        elif embedder.id != index.embedder_id or embedder.dim != dim:
            raise ValueError(
                f"embedder {embedder.id!r} ({embedder.dim}-d) does not match the index's "
                f"{index.embedder_id!r} ({dim}-d)"
            )
        import faiss

        faiss.omp_set_num_threads(faiss_threads)
        self.index = index
        self.embedder = embedder
        self._lock = threading.Lock()

    @property
    def dense_ready(self) -> bool:
        """False while the index's dense part is pending: retrieval is BM25 only."""
        return self.index.dense is not None and self.embedder is not None

    @property
    def chunks(self) -> Sequence[Chunk]:
        """The index's chunks; a chunk's id is its position."""
        return self.index.chunks

    @property
    def mode(self) -> str:
        """``hybrid`` (BM25 and dense fused), ``bm25`` (an index without a dense part) or
        ``bm25 (dense pending)`` (a BM25-first index waiting for ``kbqa index --continue``)."""
        if self.dense_ready:
            return "hybrid"
        return "bm25 (dense pending)" if self.index.dense_pending else "bm25"

    def search_bm25(self, query: str, n: int) -> dict[int, float]:
        """Top-``n`` chunks by BM25: chunk id -> score (> 0 only). The query's terms are made as
        the index's were (words, plus their character 4-grams in a current index)."""
        tokens = tokenize(query)
        if tokens and self.index.bm25_terms == TERMS_WORDS_NGRAMS:
            tokens = with_ngrams(tokens)
        if not tokens:  # only punctuation or symbols: nothing for BM25 to match
            return {}
        scores = self.index.bm25.get_scores(tokens)
        n = min(n, len(scores))
        top = np.argpartition(-scores, n - 1)[:n]
        return {int(i): float(scores[i]) for i in top if scores[i] > 0}

    def term_idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Lucene BM25 IDF of each term over the index's chunks, from the BM25 index's document
        frequencies (a term the index lacks has document frequency 0). Terms are as the index
        makes them (:func:`~kbqa.retrieval.tokenizer.with_ngrams`)."""
        bm25 = self.index.bm25
        indptr = bm25.scores["indptr"]  # bm25s keeps a term's postings as one CSC column
        n_docs = int(bm25.scores["num_docs"])
        out = {}
        for t in terms:
            i = bm25.vocab_dict.get(t)
            df = int(indptr[i + 1] - indptr[i]) if i is not None and i + 1 < len(indptr) else 0
            out[t] = bm25_idf(n_docs, df)
        return out

    def search_dense(self, query: str, n: int) -> dict[int, float]:
        """Top-``n`` chunks by cosine similarity: chunk id -> score (empty while the dense part
        is pending)."""
        if self.embedder is None or self.index.dense is None:
            return {}
        with self._lock:  # the embedder's C engine is not documented as thread-safe
            vec = self.embedder.embed_queries([query])
        if not np.any(vec):  # no word the embedder knows (emoji, punctuation): no dense hit
            return {}
        sims, ids = self.index.dense.search(vec, min(n, self.index.dense.ntotal))
        return {int(i): float(s) for i, s in zip(ids[0], sims[0], strict=True) if i >= 0}

    def check_weights(self, bm25_weight: float, dense_weight: float) -> None:
        """Check that this index can retrieve with these fusion weights (before a run of many
        questions, as well as in :meth:`retrieve`).

        Raises:
            ValueError: Both weights are 0, or BM25 is off (``bm25_weight`` 0) and the index
                has no dense part: not built yet (``kbqa index --continue`` adds it) or none
                (built with ``--embedder none``).
        """
        if bm25_weight <= 0 and dense_weight <= 0:
            raise ValueError("at least one of bm25_weight and dense_weight must be > 0")
        if bm25_weight > 0 or self.dense_ready:
            return
        if self.index.dense_pending:
            raise ValueError(
                "dense retrieval was asked for alone, but the index's dense part is not "
                "built yet (kbqa index --continue)"
            )
        raise ValueError(  # --continue refuses such an index: it has nothing to add
            "dense retrieval was asked for alone, but the index has no dense part "
            "(built with --embedder none); rebuild it with --embedder e5 or static, "
            "or keep --bm25-weight above 0"
        )

    def retrieve(
        self,
        query: str,
        k: int,
        *,
        bm25_weight: float = BM25_WEIGHT,
        dense_weight: float = DENSE_WEIGHT,
        candidate_pool: int = CANDIDATE_POOL,
        fusion: Literal["weighted", "rrf"] = "weighted",
        pad_previous: bool = True,
    ) -> list[RetrievedChunk]:
        """Fused top-``k`` chunks, each preceded by the chunk before it in its document.

        Args:
            query: The question.
            k: Number of hits (> 0). With padding up to ``2k`` chunks are returned.
            bm25_weight: Weight of BM25 in the fused score; 0 switches BM25 off.
            dense_weight: Weight of dense retrieval; 0 switches it off.
            candidate_pool: Candidates taken from each retriever before fusion.
            fusion: ``"weighted"`` (HybridRAG-BN) or ``"rrf"`` (reciprocal rank fusion).
            pad_previous: Add the previous chunk of each hit.

        Returns:
            Chunks in reading order for the prompt: for each hit by rank, its previous chunk
            (if any and not already present), then the hit.

        Raises:
            ValueError: ``k`` <= 0 or both weights are 0.
        """
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        self.check_weights(bm25_weight, dense_weight)
        if not self.dense_ready:
            bm25_weight, dense_weight = 1.0, 0.0  # BM25 alone: its best hit scores 1.0
        pool = max(candidate_pool, k)
        bm25 = self.search_bm25(query, pool) if bm25_weight > 0 else {}
        dense = self.search_dense(query, pool) if dense_weight > 0 else {}
        if fusion == "rrf":
            fused = reciprocal_rank_fusion(
                sorted(bm25, key=lambda i: -bm25[i]), sorted(dense, key=lambda i: -dense[i])
            )
        else:
            fused = weighted_fusion(bm25, dense, bm25_weight, dense_weight)
        hits = fused[:k]
        return (
            pad_with_previous(self.index, hits)
            if pad_previous
            else [
                RetrievedChunk(cid, score, rank) for rank, (cid, score) in enumerate(hits, start=1)
            ]
        )


def pad_with_previous(index: ChunkIndex, hits: list[tuple[int, float]]) -> list[RetrievedChunk]:
    """Insert the chunk before each hit (same document) ahead of it, without duplicates."""
    return pad_hits(lambda cid: index.chunks[cid].prev_chunk_id, hits)


def pad_hits(prev_of: Callable[[int], int], hits: list[tuple[int, float]]) -> list[RetrievedChunk]:
    """:func:`pad_with_previous` for any store: ``prev_of(chunk_id)`` is the chunk's
    ``prev_chunk_id`` (-1 for a document's first chunk)."""
    out: list[RetrievedChunk] = []
    seen: set[int] = set()
    hit_ids = {cid for cid, _ in hits}
    for rank, (cid, score) in enumerate(hits, start=1):
        prev = prev_of(cid)
        if prev >= 0 and prev not in seen and prev not in hit_ids:
            out.append(RetrievedChunk(prev, score, rank, is_padding=True))
            seen.add(prev)
        if cid not in seen:
            out.append(RetrievedChunk(cid, score, rank))
            seen.add(cid)
    return out
