"""``milvus://`` store URIs: where a Milvus copy of a kbqa index lives, and the client for it.

Forms (the part after ``#`` names the collections, default :data:`DEFAULT_COLLECTION`)::

    milvus://kb.db                      Milvus Lite, a local folder (relative to the working dir)
    milvus:///srv/kbqa/kb.db#bnwiki     Milvus Lite, an absolute path, collections bnwiki__*
    milvus://http://host:19530#bnwiki   a Milvus server or cluster (https:// for TLS)

A server that needs credentials reads them from ``$MILVUS_TOKEN`` (``user:password`` or an API
key), never from the URI, so a token does not end up in shell history, logs or manifests.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa.errors import IndexLoadError
from kbqa.paths import in_the_way, write_refusal

SCHEME = "milvus://"
DEFAULT_COLLECTION = "kbqa"
TOKEN_ENV = "MILVUS_TOKEN"
"""Environment variable holding a Milvus server's token (``user:password`` or an API key)."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
"""Milvus collection names: a letter or ``_``, then letters, digits and ``_`` (255 at most;
kbqa keeps 128 for the base so that its suffixes fit)."""
EXTRA_HINT = "pip install 'kbqa[milvus]' (pymilvus and milvus-lite)"


def is_milvus_uri(location: str) -> bool:
    """True for a ``milvus://`` store URI (anything else is an index directory)."""
    return location.startswith(SCHEME)


@dataclass(frozen=True, slots=True)
class MilvusStore:
    """Where a Milvus copy of an index lives.

    Attributes:
        uri: What ``pymilvus.MilvusClient(uri=...)`` takes: an absolute ``.db`` path (Milvus
            Lite) or ``http(s)://host:port`` (a server or cluster).
        collection: Base name of the store's collections (see :mod:`.store`).
    """

    uri: str
    collection: str

    @property
    def is_lite(self) -> bool:
        """True for an embedded Milvus Lite store (a local folder), False for a server."""
        return not self.uri.startswith(("http://", "https://"))

    def __str__(self) -> str:
        return f"{SCHEME}{self.uri}#{self.collection}"


def parse_store_uri(location: str) -> MilvusStore:
    """Split ``milvus://PATH_OR_URI[#COLLECTION]`` into the client's URI and the collection name.

    Args:
        location: The ``--store`` / ``--index`` value.

    Returns:
        The store; a Lite path is made absolute (it is not required to exist here).

    Raises:
        IndexLoadError: Not a ``milvus://`` URI, nothing after the scheme, a server address
            without a host, a path that is not a ``.db`` file (or is only the extension), or a
            collection name Milvus would refuse.
    """
    if not is_milvus_uri(location):
        raise IndexLoadError(f"{location!r} is not a milvus:// URI")
    rest, _, name = location[len(SCHEME) :].partition("#")
    name = name or DEFAULT_COLLECTION
    if not rest:
        raise IndexLoadError(
            f"{location!r} names no Milvus store: give milvus://PATH.db (Milvus Lite) or "
            "milvus://http://HOST:PORT (a server), optionally followed by #COLLECTION"
        )
    if not _NAME.fullmatch(name):
        raise IndexLoadError(
            f"{location!r}: collection name {name!r} is not valid for Milvus (a letter or _, "
            "then letters, digits or _, at most 128 characters)"
        )
    if rest.startswith(("http://", "https://")):
        if not rest.partition("://")[2].strip("/"):
            raise IndexLoadError(
                f"{location!r}: the server address {rest!r} has no host; "
                "give milvus://http://HOST:PORT"
            )
        return MilvusStore(rest.rstrip("/"), name)
    if "://" in rest:
        raise IndexLoadError(
            f"{location!r}: unsupported Milvus address {rest!r}; use http://HOST:PORT, "
            "https://HOST:PORT or a Milvus Lite store PATH.db"
        )
    if not rest.endswith(".db"):
        raise IndexLoadError(
            f"{location!r}: a Milvus Lite store is a folder whose name ends in .db (got {rest!r}); "
            "a server is milvus://http://HOST:PORT"
        )
    if Path(rest).name == ".db":
        raise IndexLoadError(
            f"{location!r}: the Milvus Lite store name {rest!r} is only the extension; "
            "give it a name, e.g. milvus://kb.db"
        )
    return MilvusStore(str(Path(rest).expanduser().resolve()), name)


def check_lite_path(store: MilvusStore, *, create: bool) -> None:
    """Refuse a Milvus Lite path that cannot be opened, before Milvus Lite touches it.

    Args:
        store: A Lite store (a server store is not checked).
        create: Writing: the store may be new, and its folder must be writable.

    Raises:
        IndexLoadError: The path is a file (milvus-lite 3 keeps a store as a folder: a file is
            not a Milvus Lite store, and is left unchanged), the store does not exist (reading),
            or its folder does not exist or is not writable (writing), or the store is not
            writable (reading too: Milvus Lite writes a lock file in it).
    """
    if not store.is_lite:
        return
    path = Path(store.uri)
    if path.exists() and not path.is_dir():
        raise IndexLoadError(
            f"{path} is not a Milvus Lite store (a Milvus Lite store is a folder; this is a "
            "file): pick another path"
        )
    if not create:
        if not path.exists():
            raise IndexLoadError(
                f"no Milvus Lite store at {path} (write one with `kbqa index KB --store "
                f"milvus://{path}`)"
            )
        refusal = write_refusal(path)
        if refusal:
            raise IndexLoadError(
                f"{store}: folder {path} is not writable ({refusal}); Milvus Lite writes a lock "
                "file in its store even to read it: copy the store to a writable folder"
            )
        return
    if not path.parent.is_dir():
        blocker = in_the_way(path.parent)
        if blocker:
            raise IndexLoadError(f"{store}: {blocker}, not a folder")
        raise IndexLoadError(f"{store}: folder {path.parent} does not exist")
    for folder in (path, path.parent) if path.exists() else (path.parent,):
        refusal = write_refusal(folder)
        if refusal:
            raise IndexLoadError(f"{store}: folder {folder} is not writable ({refusal})")


def _quiet_lite_grpc() -> None:
    """Silence the ``grpc._server`` logger for Milvus Lite, which serves pymilvus in process.

    pymilvus 3.0.2 asks milvus-lite 3.2.2 for ``AllocTimestamp``, which milvus-lite does not
    implement: grpc logs ``ERROR grpc._server: Exception calling application: Method not
    implemented!`` with a traceback on every write, although the write succeeds (pymilvus
    falls back). Only CRITICAL records of that logger are kept.
    """
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)


@contextlib.contextmanager
def held_milvus_log() -> Iterator[list[logging.LogRecord]]:
    """Hold back what the ``milvus_lite`` and ``pymilvus`` loggers write while a store opens or
    is written: a failure is logged with a full traceback before pymilvus raises (``ERROR
    milvus_lite.server_manager: Failed to start ...``, ``ERROR pymilvus.decorators: ...``); the
    records are kept for kbqa's one-line error instead."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    loggers = [logging.getLogger(name) for name in ("milvus_lite", "pymilvus")]
    saved = [logger.propagate for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield records
    finally:
        for logger, propagate in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate


@contextlib.contextmanager
def lite_writer_lock(store: MilvusStore) -> Iterator[None]:
    """Hold an exclusive lock (``.NAME.db.kbqa-write.lock`` beside a Lite store) while one
    ``kbqa index --store`` writes it: two writers that open a new store at once both get in
    and collide on its collections. A server store needs none (kbqa does not lock it).

    Raises:
        IndexLoadError: Another ``kbqa index --store`` is writing the store.
    """
    if not store.is_lite:
        yield
        return
    import fcntl

    path = Path(store.uri)
    lock = path.with_name(f".{path.name}.kbqa-write.lock")
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise IndexLoadError(
                f"another `kbqa index --store` is writing {store} right now; wait for it to "
                "finish (or stop it) and run this again"
            ) from None
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)


def connect(store: MilvusStore, *, create: bool = False) -> Any:
    """A ``pymilvus.MilvusClient`` for ``store``.

    Args:
        create: Allow a new Milvus Lite file (writing); reading refuses a missing one, which
            Milvus Lite would otherwise create empty.

    Raises:
        IndexLoadError: pymilvus (or milvus-lite, for a ``.db`` store) is not installed; the
            Lite path is a file, not a Milvus Lite store; the Lite store does not exist
            (reading) or its folder does not exist or is not writable (writing); Milvus Lite
            cannot open the store; or the server cannot be reached.
    """
    try:
        from pymilvus import MilvusClient
    except ImportError:
        raise IndexLoadError(f"{store} needs the Milvus extra: {EXTRA_HINT}") from None
    if store.is_lite:
        try:
            import milvus_lite  # noqa: F401  # pymilvus opens .db files through it
        except ImportError:
            raise IndexLoadError(
                f"{store} is a Milvus Lite file, which needs milvus-lite: {EXTRA_HINT}"
            ) from None
        check_lite_path(store, create=create)
        _quiet_lite_grpc()
        with held_milvus_log() as records:
            try:
                return MilvusClient(uri=store.uri)
            except Exception as exc:  # pymilvus: ConnectionConfigException "Open local ..."
                failure = exc
        causes = [str(r.exc_info[1]) for r in records if r.exc_info and r.exc_info[1]]
        if any("holds the lock" in c for c in causes):
            raise IndexLoadError(
                f"the Milvus Lite store {store.uri} is open in another process (a `kbqa index` "
                "writing it, or a `kbqa ask`/`chat` reading it): a Lite store serves one "
                "process at a time; wait for that one, or use a Milvus server (docs/milvus.md)"
            ) from None
        why = "; ".join(causes) or getattr(failure, "message", None) or str(failure)
        raise IndexLoadError(
            f"cannot open the Milvus Lite store {store.uri} ({why}): is it a Milvus Lite "
            "store, is its folder writable, and is no other process using it? A Lite store "
            "serves one process at a time; for several, use a Milvus server (docs/milvus.md)"
        ) from None
    try:
        return MilvusClient(uri=store.uri, token=os.environ.get(TOKEN_ENV, ""))
    except Exception as exc:  # pymilvus raises MilvusException or grpc errors
        raise IndexLoadError(f"cannot connect to the Milvus server {store.uri}: {exc}") from None
