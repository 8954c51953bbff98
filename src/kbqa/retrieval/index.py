"""The on-disk index: one directory holding everything retrieval needs, and no pickle.

Layout::

    <index>/manifest.json   kbqa version, embedder id, chunking parameters, counts, source sha256
    <index>/chunks.jsonl    the chunk store, one chunk per line, row = chunk_id
    <index>/bm25/           bm25s index (numpy arrays + JSON vocabulary)
    <index>/dense.faiss     FAISS IndexFlatIP of L2-normalised passage vectors (absent while
                            a BM25-first index waits for `kbqa index --continue`)
    <index>/static/         the static embedder's table, fitted on this knowledge base
    <index>/recurring_blocks.json   what the cleaning learned to remove (`kbqa index` only)

``<index>`` is a link to a complete build in a sibling version directory
(:mod:`kbqa.retrieval.versions`): a build is written to a temporary sibling, then published by
one atomic switch of the link, so a failed or interrupted build never leaves a half-written
index, and a reader loading during a rebuild gets the old index or the new one, never a mix.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import resource
import shutil
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from kbqa import __version__
from kbqa.corpus.chunking import CHUNK_OVERLAP, CHUNK_SIZE, Chunk, chunk_document
from kbqa.corpus.loaders import Document
from kbqa.errors import IndexLoadError, InputError
from kbqa.retrieval.embed_cache import (
    EmbeddingCache,
    _BuildLock,
    _clear_caches,
    interrupted_build,
)
from kbqa.retrieval.embedders import Embedder, load_embedder
from kbqa.retrieval.static import STATIC_DIR, StaticDistiller, count_words, vocabulary
from kbqa.retrieval.static import STATIC_EMBEDDER as STATIC_EMBEDDER_ID
from kbqa.retrieval.tokenizer import (
    TERMS_WORDS,
    TERMS_WORDS_NGRAMS,
    tokenize,
    url_tokens,
    with_ngrams,
)
from kbqa.retrieval.versions import publish, publish_path, resolve_index
from kbqa.text import TEXT_NORMALIZATION

FORMAT_VERSION = 2
"""2: BM25 terms made after :func:`kbqa.text.normalize_text` (zero-width characters no longer
split words). A version-1 index is refused: its terms would not match the new queries."""
MANIFEST = "manifest.json"
CHUNKS = "chunks.jsonl"
BM25_DIR = "bm25"
DENSE = "dense.faiss"
RECURRING_BLOCKS = "recurring_blocks.json"
"""Every recurring block the cleaning learned (``kbqa index`` writes it), for checking."""
DenseWhen = Literal["now", "later"]

log = logging.getLogger("kbqa.index")


@dataclass
class BuildReport:
    """What a build did: counts, seconds per stage and peak resident memory (MiB).

    Stages: ``load+chunk``, ``bm25``, ``dense`` (absent without a dense part; for the static
    embedder it includes ``distil``, e5 on every distinct word), ``write``.

    ``documents`` and ``chunks`` add up over the strategies built; ``per_strategy`` has each
    one's. ``distinct_texts`` is how many different chunk texts there were, ``reused_chunks``
    how many of them took their vector from the index being replaced, ``resumed_chunks`` how
    many from an interrupted build's cache, ``embedded_chunks`` how many were embedded now.
    ``table_words`` is the static embedder's vocabulary (0 for others), ``resumed_words`` how
    many of its words came from an interrupted build's cache.
    """

    documents: int = 0
    chunks: int = 0
    stage_seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mib: float = 0.0
    resumed_chunks: int = 0
    reused_chunks: int = 0
    distinct_texts: int = 0
    embedded_chunks: int = 0
    table_words: int = 0
    resumed_words: int = 0
    per_strategy: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class StrategyInput:
    """One sub-index of :func:`build_indexes`: cleaned documents and their chunking."""

    documents: Iterable[Document]
    chunk_size: int = CHUNK_SIZE
    chunk_overlap: int = CHUNK_OVERLAP
    extra_files: dict[str, str] = field(default_factory=dict)
    """Files written into the sub-index directory as they are (name -> text), e.g. the
    recurring blocks its cleaning removed."""


@dataclass
class ChunkIndex:
    """A loaded index: chunk store, BM25 index, FAISS index and manifest."""

    path: Path
    manifest: dict[str, Any]
    chunks: list[Chunk]
    bm25: Any
    dense: Any
    """FAISS index, or None while the dense part is pending (``kbqa index --continue``)."""

    @property
    def embedder_id(self) -> str:
        return str(self.manifest["embedder"])

    @property
    def dense_ready(self) -> bool:
        """False for an index without dense vectors (``none``, or not built yet)."""
        return self.dense is not None

    @property
    def dense_pending(self) -> bool:
        """True for a BM25-first index waiting for ``kbqa index --continue``."""
        return self.dense is None and self.manifest.get("dense") == "pending"

    @property
    def bm25_terms(self) -> str:
        """How the BM25 terms were made: ``words+char4grams``, or ``words`` (older indexes)."""
        return str(self.manifest.get("bm25_terms", TERMS_WORDS))


def bm25_text(chunk: Chunk) -> list[str]:
    """BM25 words of a chunk: title and URL host/path words, then the chunk text.

    Enrichment from the type-aware RAG seed: a question about "external relations" matches
    ``/people/staff/external-relations-staff/`` better than the prose does.
    """
    return tokenize(chunk.title) + url_tokens(chunk.url) + tokenize(chunk.text)


def bm25_terms(chunk: Chunk) -> list[str]:
    """What BM25 indexes for a chunk: :func:`bm25_text`'s words and their character 4-grams
    (:func:`kbqa.retrieval.tokenizer.with_ngrams`; manifest ``bm25_terms``)."""
    return with_ngrams(bm25_text(chunk))


def dense_text(chunk: Chunk) -> str:
    """Text embedded for a chunk: title, newline, chunk text."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far, in MiB (Linux ``ru_maxrss`` is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def source_sha256(path: Path) -> str:
    """sha256 of a knowledge-base file, or of every file (path and bytes) under a folder."""
    digest = hashlib.sha256()
    if path.is_dir():  # as the folder loader reads it: links not followed
        files = sorted(f for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    else:
        files = [path]
    for f in files:
        if path.is_dir():
            digest.update(f.relative_to(path).as_posix().encode())
        try:
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:  # a file the loader skipped (--skip-bad-lines) as unreadable
            if not path.is_dir():
                raise InputError(f"{f}: cannot be read ({exc.strerror or exc})") from None
            digest.update(f"unreadable {exc.errno}".encode())
    return digest.hexdigest()


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
    _check_replaceable(out)
    resolved = out.parent.resolve() / out.name
    if source is not None and Path(source).resolve() in (resolved, *resolved.parents):
        raise InputError(f"the index {out} cannot be written inside the knowledge base {source}")
    report = BuildReport()
    t0 = time.perf_counter()
    chunked: dict[str, tuple[int, list[Chunk]]] = {}
    for name, part in parts.items():
        desc = f"chunk {name}" if multi else "chunk"
        n_docs, empty, chunks = _chunk_all(part, desc=desc, progress=progress)
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
    with _BuildLock(out):
        return _write_index(
            chunked, parts, out, embedder, report, source=source, progress=progress,
            reuse=reuse, multi=multi, dense=dense,
        )  # fmt: skip


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
    import bm25s
    from tqdm import tqdm

    try:
        _remove_stale_temp_dirs(out)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for name in parts if multi else ():
            (tmp / name).mkdir()
    except OSError as exc:
        raise InputError(f"cannot write index to {out}: {exc.strerror or exc}") from None
    try:
        t0 = time.perf_counter()
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
            retriever.save(str((tmp / name if multi else tmp) / BM25_DIR), show_progress=False)
        report.stage_seconds["bm25"] = time.perf_counter() - t0

        dim = embedder.dim
        if dense == "now" and embedder.dim > 0:
            t0 = time.perf_counter()
            part_dirs = {name: tmp / name if multi else tmp for name in chunked}
            dim = _add_dense(
                part_dirs,
                {name: chunks for name, (_, chunks) in chunked.items()},
                embedder,
                out,
                report,
                progress=progress,
                reuse=reuse,
            ).dim  # the static table's PCA may give fewer dimensions than asked
            report.stage_seconds["dense"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        base = {
            "format_version": FORMAT_VERSION,
            "kbqa_version": __version__,
            "embedder": embedder.id,
            "embedding_dim": dim,
            "dense": "none" if embedder.dim == 0 else ("ready" if dense == "now" else "pending"),
            "bm25_terms": TERMS_WORDS_NGRAMS,
            "text_normalization": TEXT_NORMALIZATION,
        }
        prov = {
            "source": str(source) if source else None,
            "source_sha256": source_sha256(Path(source)) if source else None,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        for name, (n_docs, chunks) in chunked.items():
            where = tmp / name if multi else tmp
            with (where / CHUNKS).open("w", encoding="utf-8") as fh:
                for c in chunks:
                    fh.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
            part = parts[name]
            manifest = (
                base
                | {
                    "chunking": {
                        "strategy": name,
                        "size": part.chunk_size,
                        "overlap": part.chunk_overlap,
                    },
                    "documents": n_docs,
                    "empty_documents": report.per_strategy[name]["empty_documents"],
                    "chunks": len(chunks),
                }
                | prov
            )
            _write_json(where / MANIFEST, manifest)
            for fname, text in parts[name].extra_files.items():
                (where / Path(fname).name).write_text(text, encoding="utf-8")
        if multi:
            top = (
                base
                | {
                    "indexes": {
                        name: {
                            "size": parts[name].chunk_size,
                            "overlap": parts[name].chunk_overlap,
                            "documents": n_docs,
                            "chunks": len(chunks),
                        }
                        for name, (n_docs, chunks) in chunked.items()
                    },
                    "default": next(iter(parts)),
                    "chunks": report.chunks,
                    "distinct_texts": report.distinct_texts,
                }
                | prov
            )
            _write_json(tmp / MANIFEST, top)
        publish(tmp, out)
        if dense == "now":  # a BM25-first build keeps an interrupted build's vectors for later
            _clear_caches(out)
        report.stage_seconds["write"] = time.perf_counter() - t0
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"cannot write index to {out}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.peak_rss_mib = peak_rss_mib()
    return report


INDEX_ENTRIES = frozenset({MANIFEST, CHUNKS, BM25_DIR, DENSE, RECURRING_BLOCKS, STATIC_DIR})
"""What an index directory holds; a directory with anything else is never replaced."""


def _is_sub_index(out: Path) -> bool:
    """``out`` is one strategy's part of a ``--strategy both`` directory (its parent's manifest
    lists it)."""
    try:
        top = json.loads((out.parent / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(top, dict) and out.name in (top.get("indexes") or {})


def _check_replaceable(out: Path) -> None:
    """Refuse to write an index over anything but an empty directory or a kbqa index (intact
    or corrupt): replacing the directory would delete every other file in it.

    Raises:
        InputError: ``out`` is a file, holds files kbqa did not write, has a manifest kbqa did
            not write, or is one sub-index of a ``--strategy both`` directory.
    """
    if _is_sub_index(out):
        raise InputError(
            f"{out} is the {out.name!r} part of the index {out.parent}; rebuild that "
            "directory instead (kbqa index KB --out DIR --strategy both)"
        )
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"{out} exists and is a file, not an index directory")
    entries = {e.name: e for e in out.iterdir()}
    if not entries:
        return
    manifest: Any = None
    if MANIFEST in entries:
        try:
            manifest = json.loads(entries[MANIFEST].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = "corrupt"
        if manifest != "corrupt" and not is_index_dir(out):
            raise InputError(
                f"{out} is not a kbqa index (its {MANIFEST} was not written by kbqa); "
                "refusing to overwrite it"
            )
    subs = set(manifest.get("indexes") or {}) if isinstance(manifest, dict) else set()
    foreign = []
    for name, entry in sorted(entries.items()):
        if name in INDEX_ENTRIES:
            continue
        inner = {e.name for e in entry.iterdir()} if entry.is_dir() else None
        if (name in subs or manifest in (None, "corrupt")) and inner and inner <= INDEX_ENTRIES:
            continue  # a sub-index of a --strategy both directory
        foreign.append(name)
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise InputError(
            f"{out} is not a kbqa index: it holds files kbqa did not write ({shown}); "
            "refusing to replace it, as that would delete them"
        )
    if manifest is None and not entries.keys() & {CHUNKS, DENSE, BM25_DIR} and not subs:
        raise InputError(f"{out} exists and is not a kbqa index; refusing to overwrite it")


def _chunk_all(part: StrategyInput, *, desc: str, progress: bool) -> tuple[int, int, list[Chunk]]:
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


def _write_json(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


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


def _add_dense(
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
    """
    import faiss

    # every distinct text once, in order of first appearance
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
    report.distinct_texts = len(texts)
    if isinstance(embedder, StaticDistiller):
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
        del word_vectors
        report.table_words = len(words)
        for d in part_dirs.values():
            staging = d / f".{STATIC_DIR}.tmp-{os.getpid()}"
            fitted.save(staging, {"distinct_texts": len(texts)})
            shutil.rmtree(d / STATIC_DIR, ignore_errors=True)
            os.replace(staging, d / STATIC_DIR)
        report.stage_seconds["distil"] = time.perf_counter() - t0  # part of "dense"
        embedder, reuse, cached = fitted, False, False  # vectors depend on this table
    else:
        cached = True
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
    if _is_sub_index(out):
        raise IndexLoadError(
            f"{out} is the {out.name!r} part of the index {out.parent}; continue that "
            f"directory instead (kbqa index --continue --out {out.parent})"
        )
    with _BuildLock(out):  # held from the first read to the last manifest written
        real = resolve_index(out)  # one version throughout: a rebuild may publish meanwhile
        top = _read_manifest(real)
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
            return _read_manifest(d).get("dense", "ready") == "ready" and files_there

        if all(complete(d) for d in part_dirs.values()):
            return report
        chunks: dict[str, list[Chunk]] = {}
        for name, d in part_dirs.items():
            # the same checks as a query would make (counts, chunk store, BM25), before any work
            _check_lexical_part(d)
            chunks[name] = _read_chunks(d)
            report.chunks += len(chunks[name])
        if embedder is None:
            embedder = load_embedder(str(top["embedder"]))
        elif embedder.id != top["embedder"]:
            raise IndexLoadError(
                f"{out} was built for embedder {top['embedder']!r}, not {embedder.id!r}"
            )
        fitted = _add_dense(
            part_dirs, chunks, embedder, out, report, progress=progress, reuse=False
        )
        for d in [*part_dirs.values(), real] if names else [real]:
            manifest = _read_manifest(d)
            manifest["dense"] = "ready"
            manifest["embedding_dim"] = fitted.dim
            staging = d / f".{MANIFEST}.tmp-{os.getpid()}"
            _write_json(staging, manifest)
            os.replace(staging, d / MANIFEST)
    _clear_caches(out)
    report.stage_seconds["dense"] = time.perf_counter() - t0
    report.peak_rss_mib = peak_rss_mib()
    return report


def _read_chunks(d: Path) -> list[Chunk]:
    try:
        with (d / CHUNKS).open(encoding="utf-8") as fh:
            return [Chunk(**json.loads(line)) for line in fh]
    except (OSError, ValueError, TypeError) as exc:
        raise IndexLoadError(
            f"{d / CHUNKS} is missing or corrupt ({exc}); rebuild the index"
        ) from None


def _check_lexical_part(d: Path) -> None:
    """Raise :class:`IndexLoadError` unless the chunk store, BM25 and manifest of ``d`` agree
    (what :func:`load_index` checks, without a dense part)."""
    import bm25s

    manifest = _read_manifest(d)
    chunks = _read_chunks(d)
    try:
        n_bm25 = int(bm25s.BM25.load(str(d / BM25_DIR), show_progress=False).scores["num_docs"])
    except Exception as exc:  # a missing or corrupt bm25/ surfaces as many exception types
        raise IndexLoadError(
            f"{d}: {BM25_DIR}/ is missing or corrupt ({type(exc).__name__}); rebuild the index"
        ) from None
    if not len(chunks) == n_bm25 == manifest.get("chunks"):
        raise IndexLoadError(
            f"{d}: chunk counts disagree (store {len(chunks)}, bm25 {n_bm25}, manifest "
            f"{manifest.get('chunks')}); rebuild the index"
        )


def _read_manifest(d: Path) -> dict[str, Any]:
    try:
        manifest = json.loads((d / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexLoadError(f"{d} is not a kbqa index ({MANIFEST} is missing)") from None
    except (OSError, ValueError) as exc:
        raise IndexLoadError(f"{d / MANIFEST} is corrupt: {exc}") from None
    if not isinstance(manifest, dict) or "embedder" not in manifest:
        raise IndexLoadError(f"{d / MANIFEST} was not written by kbqa")
    return manifest


def has_strategy(path: str | Path, strategy: str) -> bool:
    """``path`` is a ``--strategy both`` directory whose manifest lists ``strategy``, or a single
    index of that strategy (whether its files are intact is for :func:`load_index` to say)."""
    try:
        manifest = json.loads((Path(path) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(manifest, dict):
        return False
    if isinstance(manifest.get("indexes"), dict):
        return strategy in manifest["indexes"]
    chunking = manifest.get("chunking")
    return isinstance(chunking, dict) and chunking.get("strategy") == strategy


def is_index_dir(path: Path) -> bool:
    """True when ``path`` holds a manifest written by kbqa (not any ``manifest.json``)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and {"kbqa_version", "embedder", "chunks"} <= manifest.keys()


def _remove_stale_temp_dirs(out: Path) -> None:
    """Delete temp dirs of earlier builds of ``out`` whose process is gone (killed builds)."""
    for stale in out.parent.glob(f".{out.name}.tmp-*"):
        try:
            os.kill(int(stale.name.rsplit("-", 1)[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


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
                raise
            last = exc
    assert last is not None
    raise last


def _load_resolved(
    p: Path, given: str | Path, *, embedder_id: str | None, strategy: str | None
) -> ChunkIndex:
    import bm25s
    import faiss

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
        inside = sorted(str(d) for d in p.iterdir() if d.is_dir() and (d / MANIFEST).exists())
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
    if "indexes" in manifest:
        names = list(manifest["indexes"])
        name = strategy or str(manifest.get("default") or names[0])
        if name not in names:
            raise IndexLoadError(f"{p} has no {name!r} index; it holds {', '.join(names)}")
        return _load_resolved(p / name, Path(given) / name, embedder_id=embedder_id,
                              strategy=None)  # fmt: skip
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
    return ChunkIndex(path=p, manifest=manifest, chunks=chunks, bm25=bm25, dense=dense)
