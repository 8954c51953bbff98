"""Where ``kbqa chat`` keeps its threads: LangGraph checkpoints in a SQLite file (the default)
or a PostgreSQL database (``--db postgresql://...``, :mod:`kbqa.threads.postgres`), each checked
before it is used, and a lock per thread so that one thread is written by one chat at a time
(two processes writing one thread lost each other's turns)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import sqlite3
import struct
from pathlib import Path
from typing import IO, Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver

from kbqa.paths import in_the_way, write_refusal

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""``--db`` values that name a PostgreSQL database rather than a SQLite file."""


class Threads(Protocol):
    """An open store of chat threads.

    Attributes:
        where: The store as messages name it: a path, or a URL without its password.
        checkpointer: The LangGraph checkpointer that keeps each thread's state.
        errors: The exceptions its driver raises once open (a lost connection, a full disk).
    """

    where: str
    checkpointer: BaseCheckpointSaver[Any]
    errors: tuple[type[Exception], ...]

    def hold(self, thread: str) -> None:
        """Hold ``thread`` for this chat, releasing the thread held before.

        Raises:
            ValueError: Another ``kbqa chat`` holds it.
        """

    def close(self) -> None:
        """Release the thread held and close the store."""


def open_threads(db: str | Path | None) -> Threads:
    """Open the store ``--db`` names: a ``postgresql://`` (or ``postgres://``) URL, a SQLite
    file, or None for :func:`default_db`.

    Raises:
        ValueError: A URL of another scheme; a path that is not a kbqa chat database
            (:func:`open_db`); a PostgreSQL database that cannot be used
            (:class:`~kbqa.threads.postgres.PostgresThreads`). Nothing is changed.
    """
    if db is None:
        return SqliteThreads(default_db())
    text = str(db)
    if text.lower().startswith(POSTGRES_SCHEMES):
        from kbqa.threads.postgres import PostgresThreads

        return PostgresThreads(text)
    scheme = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text)
    if isinstance(db, str) and scheme:
        raise ValueError(
            f"--db {scheme.group(0)}...: kbqa chat keeps threads in a SQLite file or in "
            "PostgreSQL (postgresql://user@host:port/dbname)"
        )
    return SqliteThreads(Path(db))


class SqliteThreads:
    """Threads in a SQLite file (``langgraph-checkpoint-sqlite``), one lock file per thread.

    Args:
        db: The file (created when missing).

    Raises:
        ValueError: ``db`` is not a kbqa chat database (:func:`open_db`).
    """

    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(self, db: Path) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        self.db = db
        self.where = str(db)
        self.conn = open_db(db)
        self.checkpointer: BaseCheckpointSaver[Any] = SqliteSaver(self.conn)
        self._lock: IO[str] | None = None

    def hold(self, thread: str) -> None:
        """Hold ``thread`` (:func:`lock_thread`), releasing the thread held before.

        Raises:
            ValueError: Another ``kbqa chat`` holds it.
        """
        handle = lock_thread(self.db, thread)
        if self._lock is not None:
            release_thread(self._lock)
        self._lock = handle

    def close(self) -> None:
        """Release the lock and close the file."""
        if self._lock is not None:
            release_thread(self._lock)
            self._lock = None
        self.conn.close()


def default_db() -> Path:
    """Where threads are kept: ``$KBQA_CACHE_DIR/chat.sqlite`` (``~/.cache/kbqa/chat.sqlite``).

    Versions up to 0.1.0 kept them beside the models (``~/.cache/kbqa/models/chat.sqlite``);
    that file is still used while it exists and the new one does not, so no thread is lost.
    """
    from kbqa.llm.cache import cache_root
    from kbqa.llm.models import cache_dir

    db = cache_root() / "chat.sqlite"
    old = cache_dir() / "chat.sqlite"
    return old if old.is_file() and not db.exists() else db


def open_db(db: Path) -> sqlite3.Connection:
    """Open (or create) the chat database, refusing without changing it a path that is not
    one: a directory, a file that is not SQLite, another program's SQLite database, or a
    file with more than one name (a hard link: SQLite's journal and locks follow the name).

    Raises:
        ValueError: The message names the path and the problem.
    """
    if db.is_dir():
        raise ValueError(f"--db {db} is a directory: give a file, e.g. {db / 'chat.sqlite'}")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = in_the_way(db.parent) or exc.strerror
        raise ValueError(f"--db {db}: cannot create its folder ({why})") from None
    refusal = write_refusal(db.parent)  # SQLite writes its journal beside the file
    if refusal:
        raise ValueError(
            f"--db {db}: its folder {db.parent} is not writable ({refusal}); "
            "kbqa chat writes every turn"
        )
    if db.is_file() and db.stat().st_nlink > 1:
        raise ValueError(
            f"--db {db} has {db.stat().st_nlink} names on the disk (hard links): SQLite keeps "
            "a database's journal and locks by its name, so two names of one file can corrupt "
            "it; use one name only (copy the file to make a second database)"
        )
    if db.is_file() and db.stat().st_size:
        try:  # a file: URI of the resolved path (a path beginning // is not a URI authority)
            probe = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
            tables = {
                r[0] for r in probe.execute("select name from sqlite_master where type='table'")
            }
            columns = {r[1] for r in probe.execute("pragma table_info(checkpoints)")}
            probe.close()
        except sqlite3.DatabaseError as exc:
            raise ValueError(f"--db {db} is not a SQLite database ({exc})") from None
        ours = {"checkpoints", "writes"}
        if tables - ours or (tables and "thread_id" not in columns):
            raise ValueError(
                f"--db {db} is another program's SQLite database (tables: "
                f"{', '.join(sorted(tables))}); give kbqa chat a file of its own"
            )
    try:
        return sqlite3.connect(str(db), check_same_thread=False)
    except sqlite3.Error as exc:
        raise ValueError(f"--db {db}: {exc}") from None


def _lock_name(thread: str) -> str:
    """``thread`` as part of a file name: as it is when plain (letters, digits, ``_``, ``-``, at
    most 64), else a BLAKE2b digest of it (a ``/``, or a name too long for the file system)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", thread):
        return thread
    return "h" + hashlib.blake2b(thread.encode(), digest_size=12).hexdigest()


_LOCK_REGION = 1 << 62
"""Where the per-thread byte locks on the database file start: far past any byte SQLite locks
(its lock bytes sit at 1 GiB) and past any real file's end."""


def _lock_inode(db: Path, thread: str) -> int | None:
    """Take an exclusive open-file-description lock (Linux ``F_OFD_SETLK``) on one byte of the
    database file that stands for ``thread``: a lock of the file itself, whatever name (a hard
    link) opened it. Returns the descriptor that holds it; None where the file is missing or
    the system has no such locks (the lock file alone holds then).

    Raises:
        ValueError: Another ``kbqa chat`` holds the thread through another name of the file.
    """
    if not hasattr(fcntl, "F_OFD_SETLK") or not db.is_file():
        return None
    offset = _LOCK_REGION + int.from_bytes(hashlib.blake2b(thread.encode(), digest_size=5).digest())
    try:
        fd = os.open(db, os.O_RDWR)
    except OSError:  # a read-only file: the lock file alone holds
        return None
    # struct flock: l_type, l_whence (short), l_start, l_len (off_t), l_pid (int, 0 for OFD)
    request = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, request)
    except OSError:
        os.close(fd)
        raise ValueError(
            f"thread {thread} is open in another kbqa chat (through another name of {db}); "
            "leave that one first"
        ) from None
    return fd


def lock_thread(db: Path, thread: str) -> IO[str]:
    """Lock ``thread`` of ``db`` for this process (an exclusive lock on a file beside the
    database, held until :func:`release_thread`, or until the handle is closed or the process
    ends): two chats writing one thread would lose each other's turns.

    The lock follows the file, not its name: the lock file sits beside the database's resolved
    path (a ``--db`` given through a symbolic link locks the same thread as the file's own
    name), and a byte lock on the database file itself (:func:`_lock_inode`) refuses a chat
    that opened it through a hard link. The lock file is removed on release, so chats leave no
    empty files behind. A lock taken on a file that was removed meanwhile is taken again on
    the new one (the usual lock-file check: the locked file must still be the one at the path).

    Raises:
        ValueError: Another ``kbqa chat`` holds it.
    """
    real = db.resolve()  # the lock follows the file, whatever link names it
    path = real.with_name(f"{real.name}.{_lock_name(thread)}.lock")
    while True:
        handle = path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ValueError(
                f"thread {thread} is open in another kbqa chat; leave that one first"
            ) from None
        try:
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()  # released and removed by its holder between open and lock
    try:
        handle.inode_lock = _lock_inode(real, thread)  # type: ignore[attr-defined]
    except BaseException:
        release_thread(handle)
        raise
    return handle


def release_thread(handle: IO[str]) -> None:
    """Remove the lock file of :func:`lock_thread` while still holding it, then close it and
    the database descriptor holding the thread's byte lock."""
    with contextlib.suppress(OSError):
        os.unlink(handle.name)
    fd = getattr(handle, "inode_lock", None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
    handle.close()
