"""Building an index: documents -> chunks -> BM25 (+ dense vectors, now or later), written to a
temporary version directory and published at once (:mod:`kbqa.index.versions`).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from kbqa.corpus.chunking import CHUNK_OVERLAP, CHUNK_SIZE, Chunk, chunk_document
from kbqa.corpus.document import Document
from kbqa.embedders import Embedder
from kbqa.errors import InputError
from kbqa.index.dense import add_dense
from kbqa.index.embed_cache import BuildLock, clear_caches
from kbqa.index.manifest import write_manifests
from kbqa.index.store import (
    BM25_DIR,
    CHUNKS,
    DENSE,
    MANIFEST,
    BuildReport,
    bm25_terms,
    check_replaceable,
    peak_rss_mib,
    remove_stale_temp_dirs,
)
from kbqa.index.versions import publish, publish_path

DenseWhen = Literal["now", "later"]

log = logging.getLogger("kbqa.index")


@dataclass
class StrategyInput:
    """One sub-index of :func:`build_indexes`: cleaned documents and their chunking."""

    documents: Iterable[Document]
    chunk_size: int = CHUNK_SIZE
    chunk_overlap: int = CHUNK_OVERLAP
    extra_files: dict[str, str] = field(default_factory=dict)
    """Files written into the sub-index directory as they are (name -> text), e.g. the
    recurring blocks its cleaning removed."""


def build_index(
    documents: Iterable[Document],
    out: str | Path,
    embedder: Embedder,
    *,
    source: str | Path | None = None,
    chunk_size: int = CHUNK_SIZE,
    chunk_overlap: int = CHUNK_OVERLAP,
    strategy: str = "coverage",
    progress: bool = True,
    reuse: bool = True,
    dense: DenseWhen = "now",
) -> BuildReport:
    """Chunk documents, build the BM25 and dense indexes, and write them atomically to ``out``.

    Args:
        documents: The knowledge base (see :func:`kbqa.corpus.load_documents`).
        out: Index directory to create or replace. An existing directory that is not a kbqa
            index and not empty is never overwritten.
        embedder: Passage embedder; its ``id`` is recorded in the manifest.
        source: The knowledge-base path, hashed into the manifest.
        chunk_size: Chunk length in characters.
        chunk_overlap: Overlap between consecutive chunks in characters.
        strategy: Name of the preprocessing strategy the documents went through (recorded in
            the manifest; see :mod:`kbqa.corpus.strategies`).
        progress: Show tqdm progress bars.
        reuse: Take the vector of every chunk text the index being replaced already holds
            (same embedder) instead of embedding it again.
        dense: ``"now"`` embeds the chunks before the index is written; ``"later"`` writes a
            BM25-only index at once (queries work, BM25 alone) whose dense part
            :func:`continue_index` adds.

    Returns:
        A :class:`BuildReport`.

    Raises:
        InputError: The knowledge base yields no text, or a loader error.
        KBQAError: ``out`` exists and is not a kbqa index.
        BuildInterrupted: Ctrl-C while embedding; what was embedded is kept for the next run.
    """
    return _build(
        {strategy: StrategyInput(documents, chunk_size, chunk_overlap)},
        out,
        embedder,
        source=source,
        progress=progress,
        reuse=reuse,
        multi=False,
        dense=dense,
    )


def build_indexes(
    parts: dict[str, StrategyInput],
    out: str | Path,
    embedder: Embedder,
    *,
    source: str | Path | None = None,
    progress: bool = True,
    reuse: bool = True,
    multi: bool = True,
    dense: DenseWhen = "now",
) -> BuildReport:
    """Build one sub-index per strategy into one directory, embedding each distinct chunk text
    once (``kbqa index --strategy both``; HybridRAG-BN's coverage and precision pipelines).

    Layout::

        <out>/manifest.json   "indexes": {name: counts and chunking}, "default": first name
        <out>/<name>/         a complete index (see the module docstring) per strategy

    :func:`load_index` on ``<out>`` opens the default (first) one, ``strategy=name`` another.

    Args:
        parts: Strategy name to its cleaned documents and chunking, primary first.
        out, embedder, source, progress, reuse, dense: As in :func:`build_index`.
        multi: False writes a single part as a plain index at ``out`` (what
            :func:`build_index` does).

    Raises:
        InputError: A strategy yields no text, a bad strategy name, or a loader error.
    """
    if not parts:
        raise InputError("build_indexes needs at least one strategy")
    if not multi and len(parts) != 1:
        raise InputError("a single index (multi=False) holds exactly one strategy")
    for name in parts:
        if not name or name in (BM25_DIR, MANIFEST, CHUNKS, DENSE) or "/" in name or "." in name:
            raise InputError(f"{name!r} cannot name a sub-index")
    if dense not in ("now", "later"):
        raise InputError(f"dense must be 'now' or 'later', got {dense!r}")
    return _build(
        parts,
        out,
        embedder,
        source=source,
        progress=progress,
        reuse=reuse,
        multi=multi,
        dense=dense,
    )


def _build(
    parts: dict[str, StrategyInput],
    out: str | Path,
    embedder: Embedder,
    *,
    source: str | Path | None,
    progress: bool,
    reuse: bool,
    multi: bool,
    dense: DenseWhen,
) -> BuildReport:
    """Chunk every part, then write the index while holding the index's build lock."""
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each build step at DEBUG
    out = publish_path(out)
    check_replaceable(out)
    resolved = out.parent.resolve() / out.name
    if source is not None and Path(source).resolve() in (resolved, *resolved.parents):
        raise InputError(f"the index {out} cannot be written inside the knowledge base {source}")
    report = BuildReport()
    t0 = time.perf_counter()
    chunked: dict[str, tuple[int, list[Chunk]]] = {}
    for name, part in parts.items():
        desc = f"chunk {name}" if multi else "chunk"
        n_docs, empty, chunks = chunk_all(part, desc=desc, progress=progress)
        if not chunks:
            what = f"{source or 'knowledge base'}" + (f" ({name})" if multi else "")
            raise InputError(f"{what}: no text to index{_empty_reason(n_docs)}")
        chunked[name] = (n_docs, chunks)
        report.documents += n_docs
        report.chunks += len(chunks)
        report.per_strategy[name] = {
            "documents": n_docs,
            "empty_documents": empty,
            "chunks": len(chunks),
        }
    report.stage_seconds["load+chunk"] = time.perf_counter() - t0

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write index to {out}: {exc.strerror or exc}") from None
    with BuildLock(out):
        return _write_index(
            chunked,
            parts,
            out,
            embedder,
            report,
            source=source,
            progress=progress,
            reuse=reuse,
            multi=multi,
            dense=dense,
        )


def _write_index(
    chunked: dict[str, tuple[int, list[Chunk]]],
    parts: dict[str, StrategyInput],
    out: Path,
    embedder: Embedder,
    report: BuildReport,
    *,
    source: str | Path | None,
    progress: bool,
    reuse: bool,
    multi: bool,
    dense: DenseWhen,
) -> BuildReport:
    """BM25, dense part and manifests into a temporary sibling of ``out``, then swapped in."""
    try:
        remove_stale_temp_dirs(out)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name in parts if multi else ():
            (tmp / name).mkdir()
    except OSError as exc:
        raise InputError(f"cannot write index to {out}: {exc.strerror or exc}") from None
    part_dirs = {name: tmp / name if multi else tmp for name in chunked}
    try:
        t0 = time.perf_counter()
        _write_bm25(chunked, part_dirs, source, progress=progress, multi=multi)
        report.stage_seconds["bm25"] = time.perf_counter() - t0
        dim = embedder.dim
        if dense == "now" and embedder.dim > 0:
            t0 = time.perf_counter()
            chunks_by_part = {name: chunks for name, (_, chunks) in chunked.items()}
            # the static table's PCA may give fewer dimensions than asked
            fitted = add_dense(
                part_dirs, chunks_by_part, embedder, out, report, progress=progress, reuse=reuse
            )
            dim = fitted.dim
            report.stage_seconds["dense"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        write_manifests(
            chunked,
            parts,
            part_dirs,
            tmp,
            embedder,
            dim,
            report,
            source=source,
            multi=multi,
            dense=dense,
        )
        publish(tmp, out)
        if dense == "now":  # a BM25-first build keeps an interrupted build's vectors for later
            clear_caches(out)
        report.stage_seconds["write"] = time.perf_counter() - t0
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"cannot write index to {out}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.peak_rss_mib = peak_rss_mib()
    return report


def _write_bm25(
    chunked: dict[str, tuple[int, list[Chunk]]],
    part_dirs: dict[str, Path],
    source: str | Path | None,
    *,
    progress: bool,
    multi: bool,
) -> None:
    """One bm25s index per part, over :func:`~kbqa.index.store.bm25_terms`.

    Raises:
        InputError: A part has no indexable word (only symbols).
    """
    import bm25s
    from tqdm import tqdm

    for name, (_, chunks) in chunked.items():
        desc = f"bm25 {name}" if multi else "bm25"
        bm25_tokens = [
            bm25_terms(c)
            for c in tqdm(chunks, desc=desc, unit="chunk", disable=not progress, leave=False)
        ]
        if not any(bm25_tokens):
            raise InputError(f"{source or 'knowledge base'}: no indexable words (only symbols)")
        retriever = bm25s.BM25()
        retriever.index(bm25_tokens, show_progress=False)  # four bars per index otherwise
        retriever.save(str(part_dirs[name] / BM25_DIR), show_progress=False)


def chunk_all(part: StrategyInput, *, desc: str, progress: bool) -> tuple[int, int, list[Chunk]]:
    """``(documents read, documents without any chunk, chunks)``."""
    from tqdm import tqdm

    chunks: list[Chunk] = []
    seen_ids: set[str] = set()
    n_docs = empty = 0
    for doc in tqdm(part.documents, desc=desc, unit="doc", disable=not progress):
        if doc.doc_id in seen_ids:
            log.warning("duplicate doc_id %r: its chunks are kept under the same id", doc.doc_id)
        seen_ids.add(doc.doc_id)
        n_docs += 1
        before = len(chunks)
        chunks.extend(
            chunk_document(
                doc.doc_id,
                doc.title,
                doc.url,
                doc.text,
                first_chunk_id=len(chunks),
                size=part.chunk_size,
                overlap=part.chunk_overlap,
            )
        )
        empty += len(chunks) == before
    return n_docs, empty, chunks


def _empty_reason(n_docs: int) -> str:
    if n_docs == 0:
        return " (it holds no documents)"
    return f" ({n_docs} documents were read, and all of them are empty after cleaning)"
