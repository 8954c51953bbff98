"""The passages a question reads under a run's settings: the fused (and, with a reranker,
reranked) hits of the run's retriever, padded with the chunk before each, as records; the
passages and sources they name. The ``retrieve``, ``retry``, ``generate``, ``extract`` and
``finalize`` nodes read through these, and so does fine-tuning's example builder, so the reader
is trained on what it is served."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.prompts import Passage
from kbqa.resources import reranker_for, retriever_for
from kbqa.retrieval.rerank import add_reranked, rerank_hits
from kbqa.retrieval.retriever import RetrievedChunk, pad_hits
from kbqa.state import RetrievedRecord, Source
from kbqa.text import visible_text


def chunks_of(ctx: Context, strategy: str | None = None) -> Sequence[Chunk]:
    """The chunks of the run's index (``strategy="precision"``: the fallback's), by chunk id."""
    return retriever_for(ctx, strategy).chunks


def retrieve_records(
    question: str, k: int, ctx: Context, strategy: str | None = None
) -> list[RetrievedRecord]:
    """Run the shared retriever (of ``strategy``'s sub-index) with the context's fusion
    settings; with a reranker on, rerank its first ``rerank_pool`` hits and keep ``k``
    (:func:`~kbqa.retrieval.rerank.rerank_hits`), or with ``ctx.rerank_add`` keep the fused
    top ``k`` and add the reranker's best ``rerank_add`` of the rest of the pool after them
    (:func:`~kbqa.retrieval.rerank.add_reranked`), then add the previous chunks.

    Raises:
        ValueError: The retriever returned a chunk id its chunks do not hold.
    """
    retriever = retriever_for(ctx, strategy)
    reranker = reranker_for(ctx, strategy)
    hits = retriever.retrieve(
        question,
        max(k, ctx.rerank_pool) if reranker else k,
        bm25_weight=ctx.bm25_weight,
        dense_weight=ctx.dense_weight,
        candidate_pool=ctx.candidate_pool,
        fusion=ctx.fusion,
        pad_previous=ctx.pad_previous and reranker is None,
    )
    chunks = retriever.chunks
    for h in hits:
        if not isinstance(h.chunk_id, int) or not 0 <= h.chunk_id < len(chunks):
            raise ValueError(
                f"the retriever returned chunk id {h.chunk_id!r}, but its chunks are numbered "
                f"0 to {len(chunks) - 1}"
            )
    if reranker is not None:
        pool = [(h.chunk_id, h.score) for h in hits if not h.is_padding]
        passages = [(chunks[c].title, chunks[c].text) for c, _ in pool]
        if ctx.rerank_add:  # the top k's padding is read with them, so it is never added
            padding = {chunks[c].prev_chunk_id for c, _ in pool[:k]} if ctx.pad_previous else ()
            kept = add_reranked(
                question, pool, passages, reranker, k, ctx.rerank_add, ctx.rerank_weight, padding
            )
        else:
            kept = rerank_hits(question, pool, passages, reranker, k, ctx.rerank_weight)
        hits = (
            pad_hits(lambda cid: chunks[cid].prev_chunk_id, kept)
            if ctx.pad_previous
            else [RetrievedChunk(c, s, rank) for rank, (c, s) in enumerate(kept, start=1)]
        )
    return [
        {
            "chunk_id": h.chunk_id,
            "doc_id": chunks[h.chunk_id].doc_id,
            "score": round(h.score, 6),
            "rank": h.rank,
            "is_padding": h.is_padding,
        }
        for h in hits
    ]


def hit_windows(records: Sequence[RetrievedRecord]) -> list[list[int]]:
    """Indices of ``records`` by hit, in retrieval order: each hit with the padding chunk
    added for it (the records of one rank), as ``--reading each`` reads them. A hit whose
    previous chunk was retrieved as a hit of its own has no padding
    (:func:`~kbqa.retrieval.retriever.pad_hits` adds a chunk once), so it is read without that
    chunk, which is read in its own window."""
    windows: dict[int, list[int]] = {}
    for i, r in enumerate(records):
        windows.setdefault(r["rank"], []).append(i)
    return list(windows.values())


def chunk_passages(
    chunks: Sequence[Chunk], records: Sequence[RetrievedRecord]
) -> list[tuple[int, Passage]]:
    """``(rank, passage)`` pairs of retrieved chunks, in prompt order."""
    return [
        (r["rank"], Passage(chunks[r["chunk_id"]].title, chunks[r["chunk_id"]].text))
        for r in records
    ]


def chunk_sources(
    chunks: Sequence[Chunk], records: Sequence[RetrievedRecord], given: Iterable[int]
) -> list[Source]:
    """Sources for an answer: the retrieved hits (not padding) whose chunks the model read."""
    shown = set(given)
    return [
        {
            "doc_id": chunks[r["chunk_id"]].doc_id,
            "title": visible_text(chunks[r["chunk_id"]].title),  # as the reader saw it
            "url": chunks[r["chunk_id"]].url,
            "chunk_id": r["chunk_id"],
            "score": r["score"],
        }
        for r in records
        if r["chunk_id"] in shown and not r["is_padding"]
    ]
