"""Where ``kbqa chat`` keeps its threads: a SQLite file of LangGraph checkpoints, checked before
it is opened, and a lock per thread so that one thread is written by one chat at a time."""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path
from typing import IO


def default_db() -> Path:
    """Where threads are kept: ``$KBQA_CACHE/chat.sqlite`` (``~/.cache/kbqa``)."""
    from kbqa.llm.models import cache_dir

    return cache_dir() / "chat.sqlite"


def open_db(db: Path) -> sqlite3.Connection:
    """Open (or create) the chat database, refusing without changing it a path that is not
    one: a directory, a file that is not SQLite, or another program's SQLite database.

    Raises:
        ValueError: The message names the path and the problem.
    """
    if db.is_dir():
        raise ValueError(f"--db {db} is a directory: give a file, e.g. {db / 'chat.sqlite'}")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--db {db}: cannot create its folder ({exc.strerror})") from None
    if db.is_file() and db.stat().st_size:
        try:
            probe = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            tables = {r[0] for r in probe.execute("select name from sqlite_master "
                                                  "where type='table'")}  # fmt: skip
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


def lock_thread(db: Path, thread: str) -> IO[str]:
    """Lock ``thread`` of ``db`` for this process (an exclusive lock on a file beside the
    database, released when the returned handle is closed or the process ends): two chats
    writing one thread would lose each other's turns.

    Raises:
        ValueError: Another ``kbqa chat`` holds it.
    """
    handle = db.with_name(f"{db.name}.{thread}.lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise ValueError(
            f"thread {thread} is open in another kbqa chat; leave that one first"
        ) from None
    return handle
