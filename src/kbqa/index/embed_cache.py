"""Resumable embedding for ``kbqa index``: vectors cached batch by batch beside the output, the
interrupt that says how far a build got, and the lock that keeps two writers off one index."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbqa.embedders import Embedder
from kbqa.errors import InputError
from kbqa.index.versions import publish_path

EMBED_BATCH = 32
"""Texts embedded and cached together."""


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while embedding: ``done`` of ``total`` texts are cached for resuming.

    A :class:`KeyboardInterrupt`, so code that stops on Ctrl-C still stops.
    """

    def __init__(self, what: str, done: int, total: int) -> None:
        super().__init__(f"{done} of {total} {what} embedded")
        self.what, self.done, self.total = what, done, total


class EmbeddingCache:
    """Embeddings saved batch by batch next to the output, so that an interrupted ``kbqa index``
    (Ctrl-C, a killed process, a closed laptop) resumes where it stopped.

    The cache lives in ``.<out>.<kind>-cache/`` (``kind``: ``embed`` for chunk texts, ``teacher``
    for the words of a static table) and is keyed by a fingerprint of the embedder id and every
    text to embed; a different knowledge base, chunking or embedder starts afresh. It is deleted
    once the index is written.
    """

    def __init__(
        self, out: Path, embedder: Embedder, texts: list[str], kind: str = "embed"
    ) -> None:
        self.dir = cache_dir(out, kind)
        self.embedder = embedder
        self.texts = texts
        digest = hashlib.sha256(f"{embedder.id}|{embedder.dim}|{EMBED_BATCH}".encode())
        for text in texts:
            digest.update(hashlib.sha256(text.encode()).digest())
        self.fingerprint = digest.hexdigest()
        meta = self.dir / "meta.json"
        try:
            same = json.loads(meta.read_text())["fingerprint"] == self.fingerprint
        except (OSError, ValueError, KeyError, TypeError):
            same = False
        if not same:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir.mkdir(parents=True)
            meta.write_text(
                json.dumps(
                    {"fingerprint": self.fingerprint, "embedder": embedder.id, "total": len(texts)}
                )
            )

    def _path(self, start: int) -> Path:
        return self.dir / f"{start:09d}.npy"

    def done_chunks(self) -> int:
        """Texts whose embeddings are already cached."""
        return sum(
            len(self.texts[s : s + EMBED_BATCH])
            for s in range(0, len(self.texts), EMBED_BATCH)
            if self._path(s).exists()
        )

    def batch(self, start: int) -> npt.NDArray[np.float32]:
        """Embeddings of texts ``[start, start + EMBED_BATCH)``: from the cache or computed."""
        cached = self._cached(start)
        if cached is not None:
            return cached
        vectors = self.embedder.embed_passages(self.texts[start : start + EMBED_BATCH])
        path = self._path(start)
        tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}.npy")
        np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp, path)
        return vectors

    def _cached(self, start: int) -> npt.NDArray[np.float32] | None:
        path = self._path(start)
        expected = (len(self.texts[start : start + EMBED_BATCH]), self.embedder.dim)
        if path.exists():
            try:
                cached = np.load(path, allow_pickle=False)
                if cached.shape == expected and cached.dtype == np.float32:
                    return np.ascontiguousarray(cached)
            except (OSError, ValueError):
                pass
        return None

    def embed_all(self, *, desc: str, unit: str, progress: bool) -> npt.NDArray[np.float32]:
        """Every text's embedding, ``(len(texts), dim)`` float32, cached batches first.

        The progress bar starts at the cached count, so its rate and time left count only the
        work still to do.

        Raises:
            BuildInterrupted: On Ctrl-C; the batches done so far stay cached.
        """
        from tqdm import tqdm

        out = np.zeros((len(self.texts), self.embedder.dim), dtype=np.float32)
        todo = []
        for start in range(0, len(self.texts), EMBED_BATCH):
            cached = self._cached(start)
            if cached is None:
                todo.append(start)
            else:
                out[start : start + len(cached)] = cached
        done = len(self.texts) - sum(len(self.texts[s : s + EMBED_BATCH]) for s in todo)
        with tqdm(
            total=len(self.texts), initial=done, desc=desc, unit=unit, disable=not progress
        ) as bar:
            try:
                for start in todo:
                    vectors = self.batch(start)
                    out[start : start + len(vectors)] = vectors
                    bar.update(len(vectors))
            except KeyboardInterrupt:
                raise BuildInterrupted(unit + "s", self.done_chunks(), len(self.texts)) from None
        return out

    def clear(self) -> None:
        """Delete the cache (after a successful build)."""
        shutil.rmtree(self.dir, ignore_errors=True)


CACHE_KINDS = ("teacher", "embed")


def cache_dir(out: Path, kind: str) -> Path:
    """Where an interrupted build of ``out`` keeps its ``kind`` embeddings."""
    return out.parent / f".{out.name}.{kind}-cache"


def clear_caches(out: Path) -> None:
    """Remove the embedding caches an interrupted build of ``out`` left (once it is published)."""
    for kind in CACHE_KINDS:
        shutil.rmtree(cache_dir(out, kind), ignore_errors=True)


def interrupted_build(out: str | Path) -> str | None:
    """A sentence on an interrupted build of ``out`` that can resume, or None when none is."""
    out = publish_path(out)
    for kind, what in (("teacher", "words of the static table"), ("embed", "chunk texts")):
        d = cache_dir(out, kind)
        try:
            total = int(json.loads((d / "meta.json").read_text())["total"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        batches = len(list(d.glob("[0-9]*.npy")))
        done = min(batches * EMBED_BATCH, total)
        return f"an interrupted build of it has {done} of {total} {what} embedded"
    return None


class BuildLock:
    """An exclusive lock on ``.<out>.lock`` while vectors are written for ``out``: a second
    build or continuation of the same index stops with an error instead of racing the first."""

    def __init__(self, out: Path) -> None:
        self.path = out.parent / f".{out.name}.lock"
        self.fh: Any = None

    def __enter__(self) -> None:
        import fcntl

        self.fh = self.path.open("a+")
        try:
            fcntl.flock(self.fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.fh.close()
            raise InputError(
                f"another `kbqa index` is writing {self.path.parent / self.path.name[1:-5]} "
                "right now; wait for it to finish (or stop it) and run this again"
            ) from None

    def __exit__(self, *exc: object) -> None:
        import fcntl

        fcntl.flock(self.fh, fcntl.LOCK_UN)
        self.fh.close()
        self.path.unlink(missing_ok=True)
