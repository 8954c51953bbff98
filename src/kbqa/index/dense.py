"""The dense part of an index: embedding the chunks (reusing the vectors of an index being
replaced, resuming an interrupted build), now or later (``kbqa index --continue``)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kbqa.corpus.chunking import Chunk
from kbqa.embedders import Embedder, load_embedder
from kbqa.embedders.static import STATIC_DIR, StaticDistiller, count_words, vocabulary
from kbqa.embedders.static import STATIC_EMBEDDER as STATIC_EMBEDDER_ID
from kbqa.errors import IndexLoadError, InputError
from kbqa.index.embed_cache import (
    BuildLock,
    EmbeddingCache,
    clear_caches,
    interrupted_build,
)
from kbqa.index.store import (
    CHUNKS,
    DENSE,
    MANIFEST,
    BuildReport,
    check_lexical_part,
    dense_text,
    peak_rss_mib,
    read_chunks,
    read_manifest,
    write_json,
)
from kbqa.index.versions import is_sub_index, publish_path, resolve_index

log = logging.getLogger("kbqa.index")


def _reusable_vectors(out: Path, embedder: Embedder) -> dict[bytes, npt.NDArray[np.float32]]:
    """Vectors of the index being replaced, by sha256 of the embedded text; empty when there is
    none, it was built with another embedder, or it cannot be read."""
    import faiss

    found: dict[bytes, npt.NDArray[np.float32]] = {}
    if not (out / MANIFEST).is_file():
        return found  # nothing built there yet
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        if manifest.get("embedder") != embedder.id or manifest.get("embedding_dim") != embedder.dim:
            return found
        dirs = [out / n for n in manifest["indexes"]] if "indexes" in manifest else [out]
    except Exception as exc:  # an unreadable old index only means nothing is reused
        log.warning("not reusing vectors from %s: %s", out, exc)
        return found
    for d in dirs:  # a broken sub-index costs only its own vectors
        if not (d / DENSE).exists():
            continue  # built BM25-first, or without a dense part: nothing to reuse
        try:
            with (d / CHUNKS).open(encoding="utf-8") as fh:
                texts = [dense_text(Chunk(**json.loads(line))) for line in fh]
            dense = faiss.read_index(str(d / DENSE))
            if dense.ntotal != len(texts) or dense.d != embedder.dim:
                raise ValueError(f"{len(texts)} chunks but {dense.ntotal} vectors")
            matrix = dense.reconstruct_n(0, dense.ntotal)
        except Exception as exc:
            log.warning("not reusing vectors from %s: %s", d, exc)
            continue
        for text, vec in zip(texts, matrix, strict=True):
            found[hashlib.sha256(text.encode()).digest()] = vec
    return found


def add_dense(
    part_dirs: dict[str, Path],
    chunks: dict[str, list[Chunk]],
    embedder: Embedder,
    out: Path,
    report: BuildReport,
    *,
    progress: bool,
    reuse: bool,
) -> Embedder:
    """Embed every distinct chunk text once and write each part's ``dense.faiss`` (and, for the
    static embedder, its fitted table) into ``part_dirs``, each file atomically.

    Returns:
        The embedder that embedded the chunks (the fitted one for the static embedder).

    Raises:
        InputError: The static embedder finds no word to distil.
        BuildInterrupted: Ctrl-C while embedding (what was embedded is cached).
    """
    import faiss

    row_of, texts, rows = _distinct_texts(chunks)
    report.distinct_texts = len(texts)
    cached = True
    if isinstance(embedder, StaticDistiller):
        embedder = _distil(embedder, texts, part_dirs, out, report, progress=progress)
        reuse, cached = False, False  # vectors depend on this table
    known = _reusable_vectors(out, embedder) if reuse else {}
    vectors = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    todo: list[int] = []
    for key, row in row_of.items():
        vec = known.get(key)
        if vec is None:
            todo.append(row)
        else:
            vectors[row] = vec
    del known
    report.reused_chunks = len(texts) - len(todo)
    report.embedded_chunks = len(todo)
    todo_texts = [texts[r] for r in todo]
    if cached:
        cache = EmbeddingCache(out, embedder, todo_texts)
        report.resumed_chunks = cache.done_chunks()
        fresh = cache.embed_all(desc="embed", unit="chunk", progress=progress)
    else:
        fresh = _embed_fast(embedder, todo_texts, progress=progress)
    if todo:
        vectors[todo] = fresh
    del fresh
    for name, part_rows in rows.items():
        index = faiss.IndexFlatIP(embedder.dim)
        index.add(np.ascontiguousarray(vectors[part_rows]))
        staging = part_dirs[name] / f".{DENSE}.tmp-{os.getpid()}"
        faiss.write_index(index, str(staging))
        os.replace(staging, part_dirs[name] / DENSE)
    return embedder


def _distinct_texts(
    chunks: dict[str, list[Chunk]],
) -> tuple[dict[bytes, int], list[str], dict[str, list[int]]]:
    """Every distinct :func:`dense_text` once, in order of first appearance: ``(row of each
    text's SHA-256, texts, each part's rows)``."""
    row_of: dict[bytes, int] = {}
    texts: list[str] = []
    rows: dict[str, list[int]] = {}
    for name, part_chunks in chunks.items():
        part_rows = rows[name] = []
        for c in part_chunks:
            text = dense_text(c)
            key = hashlib.sha256(text.encode()).digest()
            if key not in row_of:
                row_of[key] = len(texts)
                texts.append(text)
            part_rows.append(row_of[key])
    return row_of, texts, rows


def _distil(
    embedder: StaticDistiller,
    texts: list[str],
    part_dirs: dict[str, Path],
    out: Path,
    report: BuildReport,
    *,
    progress: bool,
) -> Embedder:
    """Distil the static word table from the teacher's vectors of the texts' words (cached and
    resumable like chunk vectors) and write it into each part, atomically; returns the fitted
    embedder.

    Raises:
        InputError: No word in any text.
    """
    t0 = time.perf_counter()
    counts = count_words(texts)
    words = vocabulary(counts)
    if not words:
        raise InputError(
            "the static embedder found no word in any chunk's title or text (only symbols); "
            "use --embedder none or e5"
        )
    teacher = EmbeddingCache(out, embedder.teacher, words, kind="teacher")
    report.resumed_words = teacher.done_chunks()
    word_vectors = teacher.embed_all(desc="distil words", unit="word", progress=progress)
    fitted = embedder.distill(counts, lambda _: word_vectors)
    report.table_words = len(words)
    for d in part_dirs.values():
        staging = d / f".{STATIC_DIR}.tmp-{os.getpid()}"
        fitted.save(staging, {"distinct_texts": len(texts)})
        shutil.rmtree(d / STATIC_DIR, ignore_errors=True)
        os.replace(staging, d / STATIC_DIR)
    report.stage_seconds["distil"] = time.perf_counter() - t0  # part of "dense"
    return fitted


def _embed_fast(embedder: Embedder, texts: list[str], *, progress: bool) -> npt.NDArray[np.float32]:
    """Embed without a cache (the static embedder does thousands of texts a second)."""
    from tqdm import tqdm

    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    step = 1024
    with tqdm(total=len(texts), desc="embed", unit="chunk", disable=not progress) as bar:
        for start in range(0, len(texts), step):
            out[start : start + step] = embedder.embed_passages(texts[start : start + step])
            bar.update(len(texts[start : start + step]))
    return out


def continue_index(
    path: str | Path, *, progress: bool = True, embedder: Embedder | None = None
) -> BuildReport:
    """Add the dense part to an index built with ``dense="later"`` (``kbqa index --continue``).

    Resumable like a build: run it again after an interruption and it goes on from the cached
    batches. Each ``dense.faiss`` (and static table) is written atomically, then the manifests
    say ``"dense": "ready"``; queries fuse BM25 and dense from then on.

    Args:
        path: The index directory (single or ``--strategy both``).
        progress: Show progress bars.
        embedder: The passage embedder (default: the one the manifest names); its id must be
            the manifest's.

    Returns:
        A :class:`BuildReport` (``embedded_chunks`` 0 when the dense part was already there).

    Raises:
        IndexLoadError: ``path`` is not a readable kbqa index.
        ModelError: Its embedder cannot be loaded.
        BuildInterrupted: Ctrl-C while embedding.
    """
    t0 = time.perf_counter()
    out = publish_path(path)
    _check_continuable(out)
    with BuildLock(out):  # held from the first read to the last manifest written
        real = resolve_index(out)  # one version throughout: a rebuild may publish meanwhile
        top = read_manifest(real)
        names = list(top["indexes"]) if isinstance(top.get("indexes"), dict) else []
        part_dirs = {n: real / n for n in names} if names else {"": real}
        report = BuildReport()
        if top.get("dense") == "none":
            raise IndexLoadError(
                f"{out} was built without a dense part (--embedder none); to add one, rebuild it "
                "with --embedder static or e5 (--dense later keeps BM25 usable meanwhile)"
            )
        static = top.get("embedder") == STATIC_EMBEDDER_ID

        def complete(d: Path) -> bool:
            files_there = (d / DENSE).is_file() and (not static or (d / STATIC_DIR).is_dir())
            return read_manifest(d).get("dense", "ready") == "ready" and files_there

        if all(complete(d) for d in part_dirs.values()):
            return report
        chunks: dict[str, list[Chunk]] = {}
        for name, d in part_dirs.items():
            # the same checks as a query would make (counts, chunk store, BM25), before any work
            check_lexical_part(d)
            chunks[name] = read_chunks(d)
            report.chunks += len(chunks[name])
        if embedder is None:
            embedder = load_embedder(str(top["embedder"]))
        elif embedder.id != top["embedder"]:
            raise IndexLoadError(
                f"{out} was built for embedder {top['embedder']!r}, not {embedder.id!r}"
            )
        fitted = add_dense(part_dirs, chunks, embedder, out, report, progress=progress, reuse=False)
        for d in [*part_dirs.values(), real] if names else [real]:
            manifest = read_manifest(d)
            manifest["dense"] = "ready"
            manifest["embedding_dim"] = fitted.dim
            staging = d / f".{MANIFEST}.tmp-{os.getpid()}"
            write_json(staging, manifest)
            os.replace(staging, d / MANIFEST)
    clear_caches(out)
    report.stage_seconds["dense"] = time.perf_counter() - t0
    report.peak_rss_mib = peak_rss_mib()
    return report


def _check_continuable(out: Path) -> None:
    """Raise :class:`IndexLoadError` when ``out`` is a file, missing (saying when an
    interrupted build can be resumed) or one part of a ``--strategy both`` index."""
    if out.exists() and not out.is_dir():
        raise IndexLoadError(f"{out} is a file, not an index directory")
    if not out.exists():
        resumable = interrupted_build(out)
        hint = (
            f"; {resumable}: run the same `kbqa index KB --out {out}` command to resume it"
            if resumable
            else f" (build one with `kbqa index KB --out {out} --dense later`)"
        )
        raise IndexLoadError(f"index not found: {out}{hint}")
    if is_sub_index(out):
        raise IndexLoadError(
            f"{out} is the {out.name!r} part of the index {out.parent}; continue that "
            f"directory instead (kbqa index --continue --out {out.parent})"
        )
