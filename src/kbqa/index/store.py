"""The index on disk: its file names, format version and chunk store, and the checks that
guard a directory (is it an index, may a build replace it).

The on-disk index: one directory holding everything retrieval needs, and no pickle.

Layout::

    <index>/manifest.json   kbqa version, embedder id, chunking parameters, counts, source sha256
    <index>/chunks.jsonl    the chunk store, one chunk per line, row = chunk_id
    <index>/bm25/           bm25s index (numpy arrays + JSON vocabulary)
    <index>/dense.faiss     FAISS IndexFlatIP of L2-normalised passage vectors (absent while
                            a BM25-first index waits for `kbqa index --continue`)
    <index>/static/         the static embedder's table, fitted on this knowledge base
    <index>/recurring_blocks.json   what the cleaning learned to remove (`kbqa index` only)

``<index>`` is a link to a complete build in a sibling version directory
(:mod:`kbqa.index.versions`): a build is written to a temporary sibling, then published by
one atomic switch of the link, so a failed or interrupted build never leaves a half-written
index, and a reader loading during a rebuild gets the old index or the new one, never a mix.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import resource
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbqa.corpus.chunking import Chunk
from kbqa.embedders.static import STATIC_DIR
from kbqa.errors import IndexLoadError, InputError
from kbqa.index.versions import is_sub_index
from kbqa.retrieval.tokenizer import (
    TERMS_WORDS,
    tokenize,
    url_tokens,
    with_ngrams,
)

FORMAT_VERSION = 2
"""2: BM25 terms made after :func:`kbqa.text.normalize_text` (zero-width characters no longer
split words). A version-1 index is refused: its terms would not match the new queries."""

MANIFEST = "manifest.json"

CHUNKS = "chunks.jsonl"
BM25_DIR = "bm25"

DENSE = "dense.faiss"

RECURRING_BLOCKS = "recurring_blocks.json"
"""Every recurring block the cleaning learned (``kbqa index`` writes it), for checking."""


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
            digest.update(os.fsencode(f.relative_to(path)))  # a name's bytes, UTF-8 or not
        try:
            with f.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:  # a file the loader skipped (--skip-bad-lines) as unreadable
            if not path.is_dir():
                raise InputError(f"{f}: cannot be read ({exc.strerror or exc})") from None
            digest.update(f"unreadable {exc.errno}".encode())
    return digest.hexdigest()


INDEX_ENTRIES = frozenset({MANIFEST, CHUNKS, BM25_DIR, DENSE, RECURRING_BLOCKS, STATIC_DIR})
"""What an index directory holds; a directory with anything else is never replaced."""


def check_replaceable(out: Path) -> None:
    """Refuse to write an index over anything but an empty directory or a kbqa index (intact
    or corrupt): replacing the directory would delete every other file in it.

    Raises:
        InputError: ``out`` is a file, holds files kbqa did not write, has a manifest kbqa did
            not write, or is one sub-index of a ``--strategy both`` directory.
    """
    if is_sub_index(out):
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


def write_json(path: Path, obj: dict[str, Any]) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_chunks(d: Path) -> list[Chunk]:
    try:
        with (d / CHUNKS).open(encoding="utf-8") as fh:
            return [Chunk(**json.loads(line)) for line in fh]
    except (OSError, ValueError, TypeError) as exc:
        raise IndexLoadError(
            f"{d / CHUNKS} is missing or corrupt ({exc}); rebuild the index"
        ) from None


def read_manifest(d: Path) -> dict[str, Any]:
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


def remove_stale_temp_dirs(out: Path) -> None:
    """Delete temp dirs of earlier builds of ``out`` (``.NAME.tmp-<pid>``) whose process is gone
    (killed builds)."""
    for stale in out.parent.glob(f".{glob.escape(out.name)}.tmp-*"):
        if not re.fullmatch(rf"\.{re.escape(out.name)}\.tmp-\d+", stale.name):
            continue  # a user's .NAME.tmp-notes-123 is not kbqa's (a break-it finding)
        try:
            os.kill(int(stale.name.rsplit("-", 1)[1]), 0)
        except ProcessLookupError:
            shutil.rmtree(stale, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


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


def check_lexical_part(d: Path) -> None:
    """Raise :class:`IndexLoadError` unless the chunk store, BM25 and manifest of ``d`` agree
    (what :func:`load_index` checks, without a dense part)."""
    import bm25s

    manifest = read_manifest(d)
    chunks = read_chunks(d)
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
