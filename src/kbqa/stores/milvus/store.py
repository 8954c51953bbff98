"""Writing a built kbqa index into Milvus collections, and reading back what they describe.

An index directory becomes, for a base name ``C`` (:class:`~.uri.MilvusStore`)::

    C__meta                key -> value: "manifest" (the index's manifest.json), the manifest of
                           each strategy, and the files queries need besides the vectors (the
                           static embedder's table), in base64 pieces
    C__<strategy>__chunks  one row per chunk: the Chunk fields, "bm25" (SPARSE_FLOAT_VECTOR, the
                           chunk's row of bm25s's BM25 score matrix) and "dense" (FLOAT_VECTOR)
    C__<strategy>__terms   BM25 term -> bm25s term id (the sparse vectors' dimensions)

Every strategy of a ``--strategy both`` directory gets its chunks and terms collections (the
graph's fallback opens ``precision``). The sparse vectors (:mod:`.sparse`) are bm25s's own scores,
so a Milvus inner product over them is the in-process BM25 score (same float32 weights).

Term ids are bm25s's vocabulary ids, not a hash of the term: on bnwiki (359,560 terms: words
and character 4-grams) a 32-bit hash (crc32 or blake2b) gives 16-17 colliding pairs, whose
documents would then match each other's queries; a lookup of the query's terms in
``C__<strategy>__terms`` (one primary-key ``get`` per question) is exact and keeps the
vocabulary in Milvus, where a server's clients can read it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbqa.embedders.static import STATIC_DIR
from kbqa.errors import IndexLoadError
from kbqa.index import MANIFEST, ChunkIndex, load_index
from kbqa.interrupts import deferred_interrupt
from kbqa.stores.milvus.sparse import EMPTY_TERM, check_bm25, document_rows
from kbqa.stores.milvus.uri import MilvusStore, connect, held_milvus_log, lite_writer_lock

log = logging.getLogger("kbqa.milvus")

META = "meta"
MAX_VARCHAR = 65_535
"""Milvus's longest VARCHAR, in bytes (a chunk text or title longer than this is refused)."""
PIECE_BYTES = 48_000
"""Raw bytes of a file per meta row (base64: 64,000 characters, under :data:`MAX_VARCHAR`)."""
INSERT_BATCH = 500
"""Rows per insert call (a chunk row is a few KiB of text plus its sparse vector)."""
DUMMY_DIM = 2
"""Milvus wants a vector field in every collection; the meta and terms ones get this one."""
PENDING = "writing"
"""Suffix of the collections a write fills before swapping them in (``C__meta__writing``); no
kbqa collection name ends with it."""


def collection_name(store: MilvusStore, part: str, strategy: str | None = None) -> str:
    """``C__meta``, ``C__<strategy>__chunks`` or ``C__<strategy>__terms``."""
    return (
        f"{store.collection}__{part}"
        if strategy is None
        else (f"{store.collection}__{strategy}__{part}")
    )


def write_store(
    index_dir: str | Path, store: MilvusStore, *, replace: bool = False
) -> dict[str, int]:
    """Copy a built index (single or ``--strategy both``) into ``store``'s collections.

    The index is written as it was built: its BM25 weights and dense vectors are copied, not
    recomputed. Every check runs before Milvus is touched; the new collections are written
    under temporary names (``...__writing``) and swapped in at the end (the old meta
    collection dropped first, the new one renamed last), so a refused or interrupted write
    leaves the old store answering queries, except when interrupted during the swap itself:
    the store then reads as incomplete until it is written again.

    Args:
        index_dir: An index directory written by ``kbqa index``.
        store: Where to write.
        replace: Replace the store's existing collections of the same base name; without it
            an existing store is refused.

    Returns:
        Chunks written per strategy.

    Raises:
        IndexLoadError: The index cannot be loaded, its dense part is still pending, its BM25
            variant does not fit sparse vectors, a chunk's text is longer than Milvus's VARCHAR
            limit, the store cannot be opened (see :func:`~.uri.connect`), the store exists
            (without ``replace``), another ``kbqa index --store`` is writing this Lite store
            (:func:`~.uri.lite_writer_lock`), or Milvus refuses a write.
        KeyboardInterrupt: Ctrl-C; the collections being written are dropped, the old ones
            kept.
    """
    from pymilvus.exceptions import MilvusException

    top, indexes = _load_checked(index_dir)
    with lite_writer_lock(store):
        client = connect(store, create=True)
        with held_milvus_log():  # its tracebacks, until it is closed; the error says what failed
            try:
                return _write_all(client, store, top, indexes, replace=replace)
            except MilvusException as exc:
                raise IndexLoadError(f"{store}: Milvus refused the write: {exc}") from None
            finally:
                with deferred_interrupt(reraise=False):
                    client.close()


def _load_checked(index_dir: str | Path) -> tuple[dict[str, Any], dict[str, ChunkIndex]]:
    """The index's top manifest and each strategy's index, checked for what Milvus needs."""
    try:
        top = json.loads((Path(index_dir) / MANIFEST).read_text(encoding="utf-8"))
        strategies = list(top["indexes"]) if "indexes" in top else [top["chunking"]["strategy"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexLoadError(
            f"{index_dir} is not a readable kbqa index ({type(exc).__name__}: {exc}); "
            f"build one with `kbqa index KB --out {index_dir}`"
        ) from None
    indexes: dict[str, ChunkIndex] = {}
    for strategy in strategies:
        several = "indexes" in top
        index = load_index(index_dir, strategy=strategy if several else None)
        shown = Path(index_dir) / strategy if several else Path(index_dir)  # not the version dir
        if index.dense_pending:
            raise IndexLoadError(
                f"{shown}: the dense part is not built yet; run "
                f"`kbqa index --continue --out {index_dir}` first"
            )
        check_bm25(index.bm25)
        for chunk in index.chunks:
            for field in ("doc_id", "title", "url", "text"):
                if len(getattr(chunk, field).encode()) > MAX_VARCHAR:
                    raise IndexLoadError(
                        f"{shown}: chunk {chunk.chunk_id}'s {field} is over {MAX_VARCHAR} "
                        "bytes, Milvus's VARCHAR limit; index with a smaller --chunk-size"
                    )
        indexes[strategy] = index
    return top, indexes


def _owned(store: MilvusStore, suffix: str = "") -> re.Pattern[str]:
    """Names of the store's collections (``suffix=PENDING``: of a write under way)."""
    return re.compile(rf"{store.collection}__(meta|[A-Za-z0-9]+__(chunks|terms)){suffix}")


def _pending(name: str) -> str:
    return f"{name}__{PENDING}"


def _write_all(
    client: Any,
    store: MilvusStore,
    top: dict[str, Any],
    indexes: dict[str, ChunkIndex],
    *,
    replace: bool,
) -> dict[str, int]:
    """:func:`write_store` once checked and connected."""
    names = client.list_collections()
    mine = [n for n in names if _owned(store).fullmatch(n)]
    if mine and not replace:
        raise IndexLoadError(
            f"{store} already holds collections {', '.join(sorted(mine))}; "
            "write with replace=True to overwrite them"
        )
    for name in names:  # left by an interrupted write
        if _owned(store, f"__{PENDING}").fullmatch(name):
            client.drop_collection(name)
    meta: dict[str, str] = {"manifest": json.dumps(top, ensure_ascii=False)}
    written: dict[str, int] = {}
    files: dict[str, str] = {}
    made: list[str] = []  # final names, the meta collection last
    try:
        for strategy, index in indexes.items():
            meta[f"manifest/{strategy}"] = json.dumps(index.manifest, ensure_ascii=False)
            made.append(collection_name(store, "terms", strategy))
            _write_terms(client, _pending(made[-1]), index)
            made.append(collection_name(store, "chunks", strategy))
            written[strategy] = _write_chunks(client, _pending(made[-1]), index)
            static = index.path / STATIC_DIR
            if static.is_dir():
                for f in sorted(static.iterdir()):
                    files[f"{strategy}/{STATIC_DIR}/{f.name}"] = _file_key(f, meta)
        meta["files"] = json.dumps(files)
        made.append(collection_name(store, META))
        _write_meta(client, _pending(made[-1]), meta)
        for name in made:
            client.flush(_pending(name))
    except BaseException:  # a refusal or Ctrl-C: the old collections are untouched
        with deferred_interrupt(reraise=False):  # a second Ctrl-C must not cut the clean-up short
            for name in made:
                try:
                    client.drop_collection(_pending(name))
                except Exception:  # best effort; the next write drops it
                    continue
        raise
    # whenever C__meta exists the set is complete: drop it first, rename its successor last
    meta_name = collection_name(store, META)
    for name in sorted(mine, key=lambda n: n != meta_name):
        client.drop_collection(name)
    for name in made:
        client.rename_collection(_pending(name), name)
    return written


def _file_key(path: Path, meta: dict[str, str]) -> str:
    """Put a file's pieces into ``meta`` (once per distinct content); its content key."""
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    pieces = [data[i : i + PIECE_BYTES] for i in range(0, len(data), PIECE_BYTES)] or [b""]
    meta[f"blob/{digest}"] = json.dumps({"pieces": len(pieces), "bytes": len(data)})
    for i, piece in enumerate(pieces):
        meta[f"blob/{digest}/{i:06d}"] = base64.b64encode(piece).decode("ascii")
    return digest


def _dummy_schema(client: Any, key: str, key_type: Any, value: tuple[str, Any]) -> tuple[Any, Any]:
    """Schema and index parameters of a key -> value collection (meta, terms), with the small
    vector field Milvus requires of every collection."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    kwargs = {"max_length": MAX_VARCHAR} if key_type == DataType.VARCHAR else {}
    schema.add_field(key, key_type, is_primary=True, **kwargs)
    name, dtype = value
    schema.add_field(
        name, dtype, **({"max_length": MAX_VARCHAR} if dtype == DataType.VARCHAR else {})
    )
    schema.add_field("_v", DataType.FLOAT_VECTOR, dim=DUMMY_DIM)
    index = client.prepare_index_params()
    index.add_index("_v", index_type="FLAT", metric_type="L2")
    return schema, index


def _write_meta(client: Any, name: str, meta: dict[str, str]) -> None:
    from pymilvus import DataType

    schema, index = _dummy_schema(client, "key", DataType.VARCHAR, ("value", DataType.VARCHAR))
    client.create_collection(name, schema=schema, index_params=index)
    rows = [{"key": k, "value": v, "_v": [0.0] * DUMMY_DIM} for k, v in meta.items()]
    for batch in _batches(rows, 100):  # 100 pieces: about 6 MiB a call
        client.insert(name, batch)


def _write_terms(client: Any, name: str, index: ChunkIndex) -> None:
    from pymilvus import DataType

    schema, params = _dummy_schema(client, "term", DataType.VARCHAR, ("term_id", DataType.INT64))
    client.create_collection(name, schema=schema, index_params=params)
    vocab: dict[str, int] = index.bm25.vocab_dict
    rows = [{"term": t, "term_id": int(i), "_v": [0.0] * DUMMY_DIM} for t, i in vocab.items()]
    for batch in _batches(rows, 5000):
        client.insert(name, batch)


def _write_chunks(client: Any, name: str, index: ChunkIndex) -> int:
    """The chunks collection: fields, BM25 sparse vectors, dense vectors, and its indexes."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("chunk_id", DataType.INT64, is_primary=True)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("position", DataType.INT64)
    schema.add_field("prev_chunk_id", DataType.INT64)
    for text_field in ("title", "url", "text"):
        schema.add_field(text_field, DataType.VARCHAR, max_length=MAX_VARCHAR)
    schema.add_field("bm25", DataType.SPARSE_FLOAT_VECTOR)
    params = client.prepare_index_params()
    params.add_index("bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    dense = index.dense.reconstruct_n(0, index.dense.ntotal) if index.dense is not None else None
    if dense is not None:
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=int(dense.shape[1]))
        params.add_index("dense", index_type="FLAT", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=params)
    rows: list[dict[str, Any]] = []
    for chunk, (terms, weights) in zip(index.chunks, document_rows(index.bm25), strict=True):
        sparse = dict(zip(terms.tolist(), weights.tolist(), strict=True)) or {EMPTY_TERM: 1.0}
        row: dict[str, Any] = {
            "chunk_id": chunk.chunk_id,
            "doc_id": chunk.doc_id,
            "position": chunk.position,
            "prev_chunk_id": chunk.prev_chunk_id,
            "title": chunk.title,
            "url": chunk.url,
            "text": chunk.text,
            "bm25": sparse,
        }
        if dense is not None:
            row["dense"] = dense[chunk.chunk_id].tolist()
        rows.append(row)
        if len(rows) == INSERT_BATCH:
            client.insert(name, rows)
            rows = []
    if rows:
        client.insert(name, rows)
    client.flush(name)
    return len(index.chunks)


def _batches(rows: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def read_meta(client: Any, store: MilvusStore, keys: list[str]) -> dict[str, str]:
    """Values of ``keys`` in the store's meta collection (missing keys are left out).

    Raises:
        IndexLoadError: The store has no meta collection: nothing was written under that name,
            or a write was interrupted while swapping its collections in.
    """
    name = collection_name(store, META)
    if not client.has_collection(name):
        names = client.list_collections()
        if any(_owned(store, f"(__{PENDING})?").fullmatch(n) for n in names):
            raise IndexLoadError(
                f"{store}: the collection set of {store.collection!r} is incomplete ({name} "
                "is missing): a write was interrupted; write it again (`kbqa index --out "
                f"INDEX_DIR --store {store}`)"
            )
        held = sorted(n.removesuffix(f"__{META}") for n in names if n.endswith(f"__{META}"))
        hint = f"; it holds {', '.join('#' + h for h in held)}" if held else ""
        raise IndexLoadError(
            f"{store}: no kbqa index named {store.collection!r} in this Milvus "
            f"store (write one with `kbqa index KB --store {store}`){hint}"
        )
    client.load_collection(name)
    rows = client.get(name, ids=keys, output_fields=["value"])
    return {r["key"]: r["value"] for r in rows}


def read_files(client: Any, store: MilvusStore, prefix: str, into: Path) -> int:
    """Write the stored files whose path starts with ``prefix`` under ``into``.

    Returns:
        The number of files written.

    Raises:
        IndexLoadError: A piece is missing or a file's sha256 does not match.
    """
    files: dict[str, str] = json.loads(read_meta(client, store, ["files"]).get("files", "{}"))
    n = 0
    for rel, digest in files.items():
        if not rel.startswith(prefix):
            continue
        info = json.loads(read_meta(client, store, [f"blob/{digest}"])[f"blob/{digest}"])
        keys = [f"blob/{digest}/{i:06d}" for i in range(info["pieces"])]
        got: dict[str, str] = {}
        for i in range(0, len(keys), 100):
            got |= read_meta(client, store, keys[i : i + 100])
        try:
            data = b"".join(base64.b64decode(got[k]) for k in keys)
        except KeyError as exc:
            raise IndexLoadError(
                f"{store}: stored file {rel} lacks piece {exc}; write the store again"
            ) from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise IndexLoadError(f"{store}: stored file {rel} is corrupt (sha256 differs)")
        target = into / rel[len(prefix) :].lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        n += 1
    return n
