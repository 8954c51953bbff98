"""Hybrid retrieval over a Milvus store: :class:`MilvusRetriever`, the
:class:`~kbqa.retrieval.retriever.Retriever` that ``kbqa ask --index milvus://...`` uses.

BM25 is a sparse inner-product search over bm25s's score rows (:mod:`.store`), dense retrieval
an inner-product search over the index's normalised vectors; both are exact (FLAT and
``SPARSE_INVERTED_INDEX``), as FAISS ``IndexFlatIP`` and bm25s are in process.

Fusion:

- ``fusion="rrf"``: Milvus ``hybrid_search`` with ``RRFRanker(60)``: the same formula as
  :func:`~kbqa.retrieval.fusion.reciprocal_rank_fusion`; ties are re-broken by chunk id as kbqa
  breaks them.
- ``fusion="weighted"``, ``weighted_ranker="kbqa"`` (default): the two candidate lists come from
  Milvus and are fused by :func:`~kbqa.retrieval.fusion.weighted_fusion` (min-max
  normalisation), so the ranking is the in-process index's.
- ``fusion="weighted"``, ``weighted_ranker="milvus"``: ``hybrid_search`` with
  ``WeightedRanker(0.65, 0.35)``, one round trip; Milvus normalises each inner-product score by
  ``0.5 + arctan(s) / pi``, which squeezes BM25 scores (tens) into about [0.97, 0.99] and lets
  the dense part decide the order: a different ranking (``benchmarks/milvus_parity.py``).
"""

from __future__ import annotations

import tempfile
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from kbqa.corpus.chunking import Chunk
from kbqa.embedders import NO_EMBEDDER, Embedder, load_embedder, resolve_embedder
from kbqa.errors import IndexLoadError
from kbqa.index import FORMAT_VERSION
from kbqa.retrieval.fusion import (
    BM25_WEIGHT,
    DENSE_WEIGHT,
    RRF_K,
    reciprocal_rank_fusion,
    weighted_fusion,
)
from kbqa.retrieval.retriever import CANDIDATE_POOL, RetrievedChunk, pad_hits
from kbqa.retrieval.tokenizer import TERMS_WORDS, TERMS_WORDS_NGRAMS, tokenize, with_ngrams
from kbqa.stores.milvus.sparse import EMPTY_TERM
from kbqa.stores.milvus.store import collection_name, read_files, read_meta
from kbqa.stores.milvus.uri import MilvusStore, connect, parse_store_uri

WeightedRanker = Literal["kbqa", "milvus"]
CHUNK_CACHE = 2048
"""Chunks :class:`MilvusChunks` keeps (a few MiB), enough for every chunk of a run's stages."""
_FIELDS = ["chunk_id", "doc_id", "position", "prev_chunk_id", "title", "url", "text"]


class MilvusChunks(Sequence[Chunk]):
    """The chunks of a Milvus store, fetched by id when asked for and kept in a small LRU cache.

    Args:
        client: A ``pymilvus.MilvusClient``.
        collection: The chunks collection.
        n: Number of chunks (ids are ``0 .. n-1``).
        cache_size: Chunks kept.
    """

    def __init__(self, client: Any, collection: str, n: int, cache_size: int = CHUNK_CACHE) -> None:
        self._client, self._collection, self._n = client, collection, n
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...
    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        """One chunk by id (negative ids count from the end), or a list for a slice.

        Raises:
            IndexError: ``i`` is out of range.
        """
        if isinstance(i, slice):
            ids = list(range(self._n))[i]
            self.fetch(ids)
            return [self[j] for j in ids]
        cid = i + self._n if i < 0 else i
        if not 0 <= cid < self._n:
            raise IndexError(f"chunk id {i} out of range (the store holds {self._n} chunks)")
        with self._lock:
            if cid in self._cache:
                self._cache.move_to_end(cid)
                return self._cache[cid]
        self.fetch([cid])
        with self._lock:
            return self._cache[cid]

    def fetch(self, ids: Iterable[int]) -> None:
        """Read the chunks among ``ids`` not cached yet, in one request.

        Raises:
            IndexLoadError: Milvus lacks one of them (the store is incomplete).
        """
        with self._lock:
            todo = sorted({int(c) for c in ids if 0 <= c < self._n} - self._cache.keys())
        if not todo:
            return
        rows = self._client.get(self._collection, ids=todo, output_fields=_FIELDS)
        got = {int(r["chunk_id"]): Chunk(**{f: r[f] for f in _FIELDS}) for r in rows}
        missing = set(todo) - got.keys()
        if missing:
            raise IndexLoadError(
                f"{self._collection} lacks chunks {sorted(missing)[:5]}; write the store again"
            )
        with self._lock:
            self._cache.update(got)
            while len(self._cache) > max(self._size, len(todo)):
                self._cache.popitem(last=False)


class MilvusRetriever:
    """BM25 (sparse) + dense retrieval over one strategy's collections of a Milvus store.

    Args:
        client: A ``pymilvus.MilvusClient`` connected to the store.
        store: The store.
        strategy: Which strategy's collections.
        manifest: That strategy's manifest (as in its index directory).
        embedder: Query embedder (the index's); None for an index without a dense part.
        weighted_ranker: Who fuses ``fusion="weighted"``: ``kbqa`` (min-max, same ranking as the
            in-process index) or ``milvus`` (``WeightedRanker``, arctan-normalised).

    Raises:
        ValueError: ``weighted_ranker`` is neither ``kbqa`` nor ``milvus``.
    """

    def __init__(
        self,
        client: Any,
        store: MilvusStore,
        strategy: str,
        manifest: dict[str, Any],
        embedder: Embedder | None,
        *,
        weighted_ranker: WeightedRanker = "kbqa",
    ) -> None:
        if weighted_ranker not in ("kbqa", "milvus"):
            raise ValueError(f"weighted_ranker must be kbqa or milvus, got {weighted_ranker!r}")
        self.client, self.store, self.strategy = client, store, strategy
        self.manifest = manifest
        self.embedder = embedder
        self.weighted_ranker = weighted_ranker
        self.chunks_collection = collection_name(store, "chunks", strategy)
        self.terms_collection = collection_name(store, "terms", strategy)
        self._chunks = MilvusChunks(client, self.chunks_collection, int(manifest["chunks"]))
        self._ngrams = manifest.get("bm25_terms", TERMS_WORDS) == TERMS_WORDS_NGRAMS
        self._lock = threading.Lock()

    @property
    def chunks(self) -> MilvusChunks:
        """The store's chunks, fetched by id (chunk id = position)."""
        return self._chunks

    @property
    def dense_ready(self) -> bool:
        """True when the store has dense vectors (always, unless built with ``none``)."""
        return self.embedder is not None

    @property
    def mode(self) -> str:
        """``hybrid`` or ``bm25`` (an index built without a dense part)."""
        return "hybrid" if self.dense_ready else "bm25"

    def warm_up(self) -> None:
        """One search per vector field, so that Milvus Lite loads the collection's segments
        and builds its in-memory indexes now (about 14 s for 25,000 chunks on 2 cores) rather
        than in the first question."""
        self._search("bm25", {EMPTY_TERM: 1.0}, 1)
        if self.embedder is not None:
            self._search("dense", [1.0] + [0.0] * (self.embedder.dim - 1), 1)
        self._chunks.fetch([0])

    def bm25_query(self, query: str) -> dict[int, float]:
        """The query's sparse vector: bm25s term id -> how often the term occurs in the query
        (bm25s adds a repeated query term's column once per occurrence). Terms the index never
        saw are left out, as bm25s leaves them out."""
        tokens = tokenize(query)
        if tokens and self._ngrams:
            tokens = with_ngrams(tokens)
        if not tokens:
            return {}
        counts = Counter(tokens)
        rows = self.client.get(self.terms_collection, ids=list(counts), output_fields=["term_id"])
        return {int(r["term_id"]): float(counts[r["term"]]) for r in rows}

    def dense_query(self, query: str) -> list[float] | None:
        """The query's vector, or None (no dense part, or no word the embedder knows)."""
        if self.embedder is None:
            return None
        with self._lock:
            vec = self.embedder.embed_queries([query])
        return None if not np.any(vec) else [float(x) for x in vec[0]]

    def _search(self, field: str, vector: Any, n: int) -> tuple[dict[int, float], dict[int, int]]:
        hits = self.client.search(
            self.chunks_collection,
            data=[vector],
            anns_field=field,
            limit=n,
            search_params={"metric_type": "IP"},
            output_fields=["prev_chunk_id"],
        )[0]
        scores = {int(h["chunk_id"]): float(h["distance"]) for h in hits}
        return scores, {int(h["chunk_id"]): int(h["entity"]["prev_chunk_id"]) for h in hits}

    def search_bm25(self, query: str, n: int) -> dict[int, float]:
        """Top-``n`` chunks by BM25: chunk id -> score (> 0), as bm25s scores them."""
        sparse = self.bm25_query(query)
        return self._search("bm25", sparse, n)[0] if sparse else {}

    def search_dense(self, query: str, n: int) -> dict[int, float]:
        """Top-``n`` chunks by cosine similarity: chunk id -> score."""
        vec = self.dense_query(query)
        return self._search("dense", vec, n)[0] if vec is not None else {}

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
        """Fused top-``k`` chunks, each preceded by the chunk before it in its document (as
        :meth:`kbqa.retrieval.retriever.HybridRetriever.retrieve`); the chunks returned are
        fetched into :attr:`chunks`'s cache in one request.

        Raises:
            ValueError: ``k`` <= 0, both weights are 0, or dense alone on a BM25-only store.
        """
        if k <= 0:
            raise ValueError(f"k must be > 0, got {k}")
        if bm25_weight <= 0 and dense_weight <= 0:
            raise ValueError("at least one of bm25_weight and dense_weight must be > 0")
        if not self.dense_ready:
            if bm25_weight <= 0:
                raise ValueError(
                    "dense retrieval was asked for alone, but the store has no "
                    "dense part (the index was built with --embedder none)"
                )
            bm25_weight, dense_weight = 1.0, 0.0
        pool = max(candidate_pool, k)
        sparse = self.bm25_query(query) if bm25_weight > 0 else {}
        vec = self.dense_query(query) if dense_weight > 0 else None
        server = fusion == "rrf" or self.weighted_ranker == "milvus"
        if sparse and vec is not None and server:
            hits, prev = self._hybrid(sparse, vec, pool, fusion, bm25_weight, dense_weight)
        else:
            bm25, prev = self._search("bm25", sparse, pool) if sparse else ({}, {})
            dense, prev_d = self._search("dense", vec, pool) if vec is not None else ({}, {})
            prev |= prev_d
            if fusion == "rrf":
                hits = reciprocal_rank_fusion(
                    sorted(bm25, key=lambda i: -bm25[i]), sorted(dense, key=lambda i: -dense[i])
                )
            else:
                hits = weighted_fusion(bm25, dense, bm25_weight, dense_weight)
        hits = hits[:k]
        out = (
            pad_hits(prev.__getitem__, hits)
            if pad_previous
            else [RetrievedChunk(c, s, r) for r, (c, s) in enumerate(hits, start=1)]
        )
        self._chunks.fetch(c.chunk_id for c in out)
        return out

    def _hybrid(
        self,
        sparse: dict[int, float],
        vec: list[float],
        pool: int,
        fusion: str,
        bm25_weight: float,
        dense_weight: float,
    ) -> tuple[list[tuple[int, float]], dict[int, int]]:
        """One ``hybrid_search``: fused ``(chunk_id, score)`` best first (ties by chunk id, as
        kbqa breaks them), and each hit's ``prev_chunk_id``."""
        from pymilvus import AnnSearchRequest, RRFRanker
        from pymilvus import WeightedRanker as MilvusWeightedRanker

        requests = [
            AnnSearchRequest(
                data=[sparse], anns_field="bm25", param={"metric_type": "IP"}, limit=pool
            ),
            AnnSearchRequest(
                data=[vec], anns_field="dense", param={"metric_type": "IP"}, limit=pool
            ),
        ]
        ranker = (
            RRFRanker(RRF_K) if fusion == "rrf" else MilvusWeightedRanker(bm25_weight, dense_weight)
        )
        found = self.client.hybrid_search(
            self.chunks_collection,
            requests,
            ranker,
            limit=2 * pool,
            output_fields=["prev_chunk_id"],
        )[0]
        hits = sorted(
            ((int(h["chunk_id"]), float(h["distance"])) for h in found),
            key=lambda cs: (-cs[1], cs[0]),
        )
        return hits, {int(h["chunk_id"]): int(h["entity"]["prev_chunk_id"]) for h in found}


def open_milvus_retriever(
    location: str,
    embedder: str = "",
    strategy: str | None = None,
    *,
    weighted_ranker: WeightedRanker = "kbqa",
) -> MilvusRetriever:
    """Connect to a ``milvus://`` store and open one strategy's collections.

    Args:
        location: ``milvus://PATH.db[#C]`` or ``milvus://http(s)://HOST:PORT[#C]``.
        embedder: The query embedder the caller expects (id or alias); empty: the store's own.
        strategy: A strategy of a ``--strategy both`` store (None: its default).
        weighted_ranker: See :class:`MilvusRetriever`.

    Raises:
        IndexLoadError: A bad URI, no such store or collection, no such strategy, an index
            format from another kbqa, or another embedder than the store's.
        ModelError: The embedder cannot be loaded.
    """
    store = parse_store_uri(location)
    client = connect(store)
    top_raw = read_meta(client, store, ["manifest"]).get("manifest")
    if top_raw is None:
        raise IndexLoadError(f"{store}: the store has no manifest; write it again")
    import json

    top = json.loads(top_raw)
    names = list(top["indexes"]) if "indexes" in top else [top["chunking"]["strategy"]]
    name = strategy or str(top.get("default") or names[0])
    if name not in names:
        raise IndexLoadError(f"{store} has no {name!r} index; it holds {', '.join(names)}")
    manifest = json.loads(read_meta(client, store, [f"manifest/{name}"])[f"manifest/{name}"])
    if manifest.get("format_version") != FORMAT_VERSION:
        raise IndexLoadError(
            f"{store}: index format {manifest.get('format_version')} is not "
            f"{FORMAT_VERSION}; write it again from a current index"
        )
    built = str(manifest["embedder"])
    if embedder and resolve_embedder(embedder) != built:
        raise IndexLoadError(
            f"{store} was built with embedder {built!r}, but "
            f"{resolve_embedder(embedder)!r} was asked for"
        )
    for part in ("chunks", "terms"):
        client.load_collection(collection_name(store, part, name))
    query_embedder: Embedder | None = None
    if built != NO_EMBEDDER:
        with tempfile.TemporaryDirectory(prefix="kbqa-milvus-") as tmp:
            read_files(client, store, f"{name}/", Path(tmp))  # the static table, if any
            query_embedder = load_embedder(built, for_queries=True, index_dir=tmp)
    retriever = MilvusRetriever(
        client, store, name, manifest, query_embedder, weighted_ranker=weighted_ranker
    )
    retriever.warm_up()
    return retriever


def store_has_strategy(location: str, strategy: str) -> bool:
    """True when the ``milvus://`` store holds ``strategy`` (False when it cannot be read)."""
    import json

    try:
        store = parse_store_uri(location)
        client = connect(store)
        top = json.loads(read_meta(client, store, ["manifest"])["manifest"])
    except (IndexLoadError, KeyError, ValueError):
        return False
    names = list(top["indexes"]) if "indexes" in top else [top["chunking"]["strategy"]]
    return strategy in names
