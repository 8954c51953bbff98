"""Loading an index: the published version behind the link, checked (format, embedder, parts)."""

from __future__ import annotations

import functools
import json
import logging
from pathlib import Path
from typing import Any

from kbqa.corpus.chunking import Chunk
from kbqa.errors import IndexLoadError
from kbqa.index.embed_cache import interrupted_build
from kbqa.index.store import BM25_DIR, CHUNKS, DENSE, FORMAT_VERSION, MANIFEST, ChunkIndex
from kbqa.index.versions import resolve_index
from kbqa.text import TEXT_NORMALIZATION

log = logging.getLogger("kbqa.index")


def load_index(
    path: str | Path, *, embedder_id: str | None = None, strategy: str | None = None
) -> ChunkIndex:
    """Load an index directory written by :func:`build_index` or :func:`build_indexes`.

    Args:
        path: The index directory.
        embedder_id: When given, the embedder the caller will query with; it must be the one
            the index was built with.
        strategy: The sub-index to open in a directory built with several strategies (default:
            its first, the primary one). For a single index it must be its own strategy.

    Raises:
        IndexLoadError: The directory is missing, a file is missing or corrupt, counts disagree,
            the format is from another kbqa version, or the embedder differs.
    """
    last: IndexLoadError | None = None
    for _ in range(3):  # a rebuild may delete the version being read: read the new one
        real = resolve_index(path)
        try:
            return _load_resolved(real, path, embedder_id=embedder_id, strategy=strategy)
        except IndexLoadError as exc:
            if resolve_index(path) == real:
                # the folder the user named, not the version folder it points to (.NAME.v-...)
                raise IndexLoadError(str(exc).replace(str(real), str(path))) from None
            last = exc
    assert last is not None
    raise last


def _load_resolved(
    p: Path, given: str | Path, *, embedder_id: str | None, strategy: str | None
) -> ChunkIndex:
    """:func:`load_index` on the version directory ``p`` that ``given`` resolved to: each part
    checked (the directory, the manifest's format and embedder, the strategy, the chunk store,
    BM25, the dense part), each with its own error message."""
    manifest = _read_manifest(p, given)
    if "indexes" in manifest:
        names = list(manifest["indexes"])
        name = strategy or str(manifest.get("default") or names[0])
        if name not in names:
            raise IndexLoadError(f"{p} has no {name!r} index; it holds {', '.join(names)}")
        return _load_resolved(p / name, Path(given) / name, embedder_id=embedder_id, strategy=None)
    built = (manifest.get("chunking") or {}).get("strategy")
    if strategy is not None and built != strategy:
        raise IndexLoadError(
            f"{p} is a {built} index, not {strategy}; build both with "
            "`kbqa index KB --strategy both`"
        )
    if embedder_id is not None and manifest.get("embedder") != embedder_id:
        raise IndexLoadError(
            f"{p} was built with embedder {manifest.get('embedder')!r}, but {embedder_id!r} "
            "was asked for; rebuild the index or use the same embedder"
        )
    chunks, bm25, dense = _read_parts(p, manifest)
    return ChunkIndex(path=p, manifest=manifest, chunks=chunks, bm25=bm25, dense=dense)


def _read_manifest(p: Path, given: str | Path) -> dict[str, Any]:
    """The manifest of the index directory ``p`` (``given``: the name the user gave), of this
    format; warns once when its text normalisation is older.

    Raises:
        IndexLoadError: ``p`` is a file, missing (saying when an interrupted build can be
            resumed), has no or a corrupt manifest, or another format.
    """
    if p.exists() and not p.is_dir():
        raise IndexLoadError(f"{p} is a file, not an index directory (built by `kbqa index`)")
    if not p.is_dir():
        resumable = interrupted_build(p)
        if resumable:
            raise IndexLoadError(
                f"index not found: {given}; {resumable}: run the same "
                f"`kbqa index ... --out {given}` command to resume it"
            )
        raise IndexLoadError(
            f"index not found: {given} (build one with `kbqa index KB --out {given}`)"
        )
    try:
        manifest = json.loads((p / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        inside = sorted(  # not the hidden version directories the index links point to
            str(d)
            for d in p.iterdir()
            if not d.name.startswith(".") and d.is_dir() and (d / MANIFEST).exists()
        )
        hint = f"; it holds the indexes {', '.join(inside)}: pass one to --index" if inside else ""
        raise IndexLoadError(f"{p} is not a kbqa index: {MANIFEST} is missing{hint}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexLoadError(f"{p / MANIFEST} is corrupt: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format_version") != FORMAT_VERSION:
        found = manifest.get("format_version") if isinstance(manifest, dict) else "?"
        why = (
            " (it was built by an older kbqa whose tokenizer split words at zero-width "
            "characters such as ZWNJ, so its words would not match today's queries)"
            if found == 1
            else ""
        )
        raise IndexLoadError(
            f"{given}: index format {found} is not {FORMAT_VERSION}{why}; rebuild it: "
            f"`kbqa index KB --out {given}`"
        )
    normalization = manifest.get("text_normalization")
    if normalization and normalization != TEXT_NORMALIZATION:  # words mostly match: warn once
        _warn_normalization(str(given), str(normalization))
    return manifest


def _read_parts(p: Path, manifest: dict[str, Any]) -> tuple[list[Chunk], Any, Any]:
    """``(chunks, bm25, dense)`` of the index directory ``p``; ``dense`` is None while the
    dense part is pending (``--dense later``) or absent.

    Raises:
        IndexLoadError: A part is missing or corrupt, the parts' counts disagree, or a chunk's
            id or previous-chunk link is inconsistent.
    """
    import bm25s
    import faiss

    pending = manifest.get("dense") in ("pending", "none") and not (p / DENSE).exists()
    for name in (CHUNKS, BM25_DIR) if pending else (CHUNKS, DENSE, BM25_DIR):
        if not (p / name).exists():
            raise IndexLoadError(f"{p}: {name} is missing; the index is incomplete, rebuild it")
    try:
        with (p / CHUNKS).open(encoding="utf-8") as fh:
            chunks = [Chunk(**json.loads(line)) for line in fh]
        dense = None if pending else faiss.read_index(str(p / DENSE))
        bm25 = bm25s.BM25.load(str(p / BM25_DIR), show_progress=False)
        n_bm25 = int(bm25.scores["num_docs"])
    except Exception as exc:  # corrupt files surface as many exception types
        raise IndexLoadError(
            f"{p}: index files are corrupt ({type(exc).__name__}: {exc})"
        ) from None
    problem = _bm25_problem(bm25.scores, bm25.vocab_dict, n_bm25)
    if problem:
        raise IndexLoadError(f"{p}: index files are corrupt ({BM25_DIR}: {problem}); rebuild it")
    n_dense = len(chunks) if dense is None else dense.ntotal
    if not (len(chunks) == n_dense == n_bm25 == manifest.get("chunks")):
        raise IndexLoadError(
            f"{p}: chunk counts disagree (store {len(chunks)}, dense {n_dense}, "
            f"bm25 {n_bm25}, manifest {manifest.get('chunks')}); rebuild the index"
        )
    for i, c in enumerate(chunks):
        prev_ok = c.prev_chunk_id == -1 or (
            0 <= c.prev_chunk_id < i and chunks[c.prev_chunk_id].doc_id == c.doc_id
        )
        if c.chunk_id != i or not prev_ok:
            raise IndexLoadError(f"{p}: {CHUNKS} row {i} is inconsistent; rebuild the index")
    return chunks, bm25, dense


def _bm25_problem(scores: dict[str, Any], vocab: dict[str, int], n_docs: int) -> str | None:
    """What is wrong with bm25s's score matrix (compressed sparse columns: one column of
    document ids and scores per term, ``vocab`` giving each term's column), or None: a
    document id out of range or a column bound out of order failed later, in retrieval, as an
    ``IndexError`` (a break-it trial edited one)."""
    import numpy as np

    data, indices, indptr = (np.asarray(scores[k]) for k in ("data", "indices", "indptr"))
    if not all(a.ndim == 1 for a in (data, indices, indptr)):
        return "an array that is not one-dimensional"
    if not (indices.dtype.kind in "iu" and indptr.dtype.kind in "iu"):
        return "document ids or column bounds that are not integers"
    if not (len(data) == len(indices) and len(indptr) and indptr[0] == 0):
        return "its arrays disagree in length"
    ids = list(vocab.values())
    if ids and (min(ids) < 0 or max(ids) >= len(indptr)):
        return f"a term whose column is outside 0-{len(indptr) - 1}"
    if indptr[-1] != len(indices) or np.any(np.diff(indptr) < 0):
        return "its column bounds are out of order"
    if len(indices) and (indices.min() < 0 or indices.max() >= n_docs):
        return f"a document id outside 0-{n_docs - 1}"
    if not np.all(np.isfinite(data)):
        return "a score that is not a number"
    return None


@functools.cache
def _warn_normalization(index: str, built: str) -> None:
    log.warning(
        "%s was built with text normalisation %s, this kbqa uses %s: words written with the "
        "legacy khanda-ta (ত্ + ZWJ) will not match until it is rebuilt: `kbqa index KB --out %s`",
        index,
        built,
        TEXT_NORMALIZATION,
        index,
    )
