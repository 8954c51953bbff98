"""``kbqa chat --db postgresql://...``: threads kept in PostgreSQL by
``langgraph-checkpoint-postgres`` (the ``postgres`` extra: ``pip install 'kbqa[postgres]'``).

One chat writes a thread at a time, as with SQLite: the chat holds a session-level advisory lock
(``pg_try_advisory_lock``) keyed on the thread id, which the server releases when the chat
leaves the thread or its connection ends (a chat that crashed holds nothing). The checkpoint
tables are created once (``PostgresSaver.setup``) under another advisory lock, so that two chats
starting at once on a new database do not both create them; that lock is polled, not waited on
(a waiting statement would deadlock with the setup's ``CREATE INDEX CONCURRENTLY``).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, unquote_plus, urlsplit

from langgraph.checkpoint.base import BaseCheckpointSaver

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.rows import DictRow

INSTALL = "pip install 'kbqa[postgres]'"
CONNECT_TIMEOUT_S = 10
"""Seconds to wait for the server when the URL sets no ``connect_timeout``."""
SETUP_WAIT_S = 120.0
"""Seconds to wait while another chat creates the tables."""
SETUP_POLL_S = 0.05
"""Seconds between tries for the setup lock."""

LANGGRAPH_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
"""The tables of ``PostgresSaver``, beside its ``checkpoint_migrations``, in the order its
migrations 1 to 3 create them."""
LANGGRAPH_COLUMNS = {
    "checkpoint_migrations": ("v",),
    "checkpoints": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "parent_checkpoint_id",
        "type",
        "checkpoint",
        "metadata",
    ),
    "checkpoint_blobs": ("thread_id", "checkpoint_ns", "channel", "version", "type", "blob"),
    "checkpoint_writes": (
        "thread_id",
        "checkpoint_ns",
        "checkpoint_id",
        "task_id",
        "idx",
        "channel",
        "type",
        "blob",
    ),
}
"""The columns ``PostgresSaver``'s migrations create (``langgraph.checkpoint.postgres.base.
MIGRATIONS``), which its queries read; ``checkpoint_writes.task_path`` comes from a later
migration that adds it where it is missing."""
INTEGER_TYPES = ("smallint", "integer", "bigint")
"""The types of ``checkpoint_migrations.v`` that ``setup`` can count on."""


def _split(url: str) -> tuple[str, str | None, str | None, str]:
    """``url`` as libpq reads it: ``(scheme://, user, password, rest)``, the user information
    running to the first ``@`` before any ``/`` (so a ``?`` or ``#`` in a password stays in it);
    user and password are None where the URL has none."""
    scheme, sep, tail = url.partition("://")
    prefix = scheme + sep if sep else ""
    tail = tail if sep else url
    found = re.match(r"[^@/]*@", tail)
    if not found:
        return prefix, None, None, tail
    user, colon, password = tail[: found.end() - 1].partition(":")
    return prefix, user, password if colon else None, tail[found.end() :]


def redact(url: str) -> str:
    """``url`` without its password (in ``user:password@`` or a ``password=`` parameter), as
    messages show it."""
    prefix, user, _, rest = _split(url)
    where, mark, query = rest.partition("?")
    if mark:
        # drop the password= items as written, so the others keep their own encoding
        kept = [p for p in query.split("&") if unquote(p.partition("=")[0]) != "password"]
        where += f"?{'&'.join(kept)}" if kept else ""
    return prefix + (f"{user}@" if user is not None else "") + where


def secrets(url: str) -> set[str]:
    """The forms of ``url``'s password that a driver's message may show: as written,
    percent-decoded and quoted for a conninfo string, from ``user:password@`` (and up to the
    last ``@``, where the password holds one) and from ``password=`` parameters."""
    _, _, password, rest = _split(url)
    found = {password} if password else set()
    longest = re.match(r"[^/]*@", url.partition("://")[2])
    if longest and ":" in longest.group(0):
        found.add(longest.group(0)[:-1].partition(":")[2])
    for pair in rest.partition("?")[2].split("&"):
        key, _, value = pair.partition("=")
        if unquote(key) == "password" and value:
            found |= {value, unquote_plus(value)}
    for text in list(found):
        found |= {unquote(text), text.replace("\\", "\\\\").replace("'", "\\'")}
    return {text for text in found if text}


SHORT_SECRET = 3
"""A password of at most this many characters is hidden only where it stands alone (not inside
a longer run of letters and digits), so that ``a`` does not hide every ``a`` of a message."""


def _hide(text: str, secret: str) -> str:
    if len(secret) > SHORT_SECRET:
        return text.replace(secret, "***")
    before = r"(?<!\w)" if re.match(r"\w", secret) else ""
    after = r"(?!\w)" if re.search(r"\w$", secret) else ""
    return re.sub(before + re.escape(secret) + after, "***", text)


def scrub(text: str, hidden: Iterable[str]) -> str:
    """``text`` on one line, each of ``hidden`` (see :func:`secrets`) shown as ``***``."""
    hidden = sorted(hidden, key=len, reverse=True)
    for secret in hidden:  # as written, then in the text put on one line
        text = _hide(text, secret)
    text = re.sub(r"\s+", " ", text).strip()
    for secret in hidden:
        text = _hide(text, re.sub(r"\s+", " ", secret).strip() or secret)
    return text


def lock_key(name: str) -> int:
    """The advisory-lock key of ``name``: a signed 64-bit integer (PostgreSQL's ``bigint``)
    from its BLAKE2b hash, so that any thread id maps to one key."""
    digest = hashlib.blake2b(f"kbqa chat {name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def connect_problem(exc: Exception, hidden: Iterable[str] = ()) -> str:
    """What a failed connection says, sorted into the problems a user can fix: the server is
    not reachable, authentication failed, the database does not exist; the driver's words
    without ``hidden`` (the password, :func:`secrets`)."""
    text = scrub(str(exc), hidden)
    detail = re.sub(r"^connection failed: |^connection is bad: ", "", text)
    low = text.lower()
    if re.search(r'database ".*" does not exist', low):
        return f"the database does not exist ({detail}); create it first (createdb)"
    if any(
        s in low for s in ("authentication failed", "no password supplied", "pg_hba.conf", 'role "')
    ):
        return f"authentication failed ({detail}); check the user and password in the URL"
    unreachable = (
        "connection refused",
        "could not connect",
        "timeout expired",
        "failed to resolve",
        "no route to host",
        "network is unreachable",
        "could not translate host",
    )
    if any(s in low for s in unreachable):
        return f"the server is not reachable ({detail}); is PostgreSQL running and listening there?"
    return f"cannot connect ({detail})"


class PostgresThreads:
    """Threads in a PostgreSQL database (``langgraph.checkpoint.postgres.PostgresSaver`` on one
    connection with ``autocommit=True`` and ``row_factory=dict_row``, as its docs require).

    Args:
        url: A ``postgresql://user[:password]@host:port/dbname`` URL (libpq's syntax).

    Raises:
        ValueError: The extra is not installed; the server is not reachable; authentication
            failed; the database does not exist; it holds tables of LangGraph's names that are
            not LangGraph's (:meth:`_refuse_foreign_tables`); the tables cannot be created. The
            message names the URL (without its password) and the problem, and nothing is
            changed.
    """

    def __init__(self, url: str) -> None:
        self.where = redact(url)
        self._hidden = secrets(url)
        try:
            urlsplit(self.where)
        except ValueError as exc:
            problem = scrub(str(exc), self._hidden)
            raise ValueError(f"--db {self.where}: not a valid URL ({problem})") from None
        try:
            import psycopg
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
        except ImportError as exc:
            raise ValueError(
                f"--db {self.where}: PostgreSQL threads need the postgres extra "
                f"({exc.name or exc} is not installed): {INSTALL}"
            ) from None
        self.errors: tuple[type[Exception], ...] = (psycopg.Error,)
        self._held: int | None = None
        try:
            conninfo = url
            if "connect_timeout" not in psycopg.conninfo.conninfo_to_dict(url):
                conninfo = psycopg.conninfo.make_conninfo(url, connect_timeout=CONNECT_TIMEOUT_S)
            self.conn: Connection[DictRow] = psycopg.connect(
                conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
        except psycopg.Error as exc:
            problem = connect_problem(exc, self._hidden)
            raise ValueError(f"--db {self.where}: {problem}") from None
        try:
            self._saver = PostgresSaver(self.conn)
            self.checkpointer: BaseCheckpointSaver[Any] = self._saver
            # The check runs under the setup lock: outside it, it can read the tables of a chat
            # halfway through its setup and take them for another program's.
            self._wait_for_setup_lock()
            try:
                self._refuse_foreign_tables()
                self._saver.setup()
            finally:
                self.conn.execute("select pg_advisory_unlock(%s)", (lock_key("setup"),))
        except psycopg.Error as exc:
            self.conn.close()
            problem = scrub(str(exc), self._hidden)
            raise ValueError(
                f"--db {self.where}: cannot create the thread tables ({problem})"
            ) from None
        except ValueError:
            self.conn.close()
            raise

    def _wait_for_setup_lock(self) -> None:
        """Take the setup lock, trying ``pg_try_advisory_lock`` every :data:`SETUP_POLL_S`.

        A blocking ``pg_advisory_lock`` deadlocks: ``PostgresSaver.setup`` runs ``CREATE INDEX
        CONCURRENTLY``, which waits for every open transaction to end, the waiting
        ``pg_advisory_lock`` statement among them, while that statement waits for the chat
        running the setup (PostgreSQL aborts one with "deadlock detected"). Each try here is a
        transaction that ends at once.

        Raises:
            ValueError: Another chat held the lock for :data:`SETUP_WAIT_S` seconds.
        """
        key = lock_key("setup")
        deadline = time.monotonic() + SETUP_WAIT_S
        while True:
            row = self.conn.execute("select pg_try_advisory_lock(%s) as got", (key,)).fetchone()
            if row is not None and row["got"]:
                return
            if time.monotonic() > deadline:
                raise ValueError(
                    f"--db {self.where}: another kbqa chat has been creating the thread tables "
                    f"for {SETUP_WAIT_S:.0f} s; try again when it has started"
                )
            time.sleep(SETUP_POLL_S)

    def _refuse_foreign_tables(self) -> None:
        """Refuse a database whose LangGraph tables are another program's: one without
        LangGraph's columns (:data:`LANGGRAPH_COLUMNS`), a ``checkpoints`` table beside no
        ``checkpoint_migrations``, or migrations recorded for tables that are not there
        (``setup`` would fail halfway, or write beside them). Runs under the setup lock (a chat
        halfway through its setup is not taken for another program) and before ``setup``, so a
        refused database is left as it was.

        Raises:
            ValueError: Naming the table and what it lacks.
        """
        rows = self.conn.execute(
            "select table_name, column_name, data_type from information_schema.columns "
            "where table_schema = current_schema() and table_name = any(%s)",
            (list(LANGGRAPH_COLUMNS),),
        ).fetchall()
        columns: dict[str, dict[str, str]] = {}
        for row in rows:
            columns.setdefault(str(row["table_name"]), {})[row["column_name"]] = row["data_type"]
        own = "; give kbqa chat a database of its own"
        for table, have in sorted(columns.items()):
            lacks = [c for c in LANGGRAPH_COLUMNS[table] if c not in have]
            if lacks:
                raise ValueError(
                    f"--db {self.where} holds another program's {table} (it has no "
                    f"{', '.join(lacks)} column){own}"
                )
        if columns.get("checkpoint_migrations", {}).get("v") not in INTEGER_TYPES:
            if "checkpoint_migrations" in columns:
                raise ValueError(
                    f"--db {self.where} holds another program's checkpoint_migrations (its v "
                    f"column is not an integer){own}"
                )
            if columns:
                theirs = ", ".join(sorted(columns))
                raise ValueError(
                    f"--db {self.where} holds another program's {theirs} "
                    f"(no checkpoint_migrations){own}"
                )
            return
        last = self.conn.execute("select max(v) as v from checkpoint_migrations").fetchone()
        done = -1 if last is None or last["v"] is None else int(last["v"])
        missing = [
            t for i, t in enumerate(LANGGRAPH_TABLES, start=1) if i <= done and t not in columns
        ]
        if missing:
            raise ValueError(
                f"--db {self.where} holds another program's checkpoint_migrations (it records "
                f"version {done}, but there is no {', '.join(missing)}){own}"
            )

    def hold(self, thread: str) -> None:
        """Hold ``thread`` (a session-level ``pg_try_advisory_lock`` on :func:`lock_key`),
        releasing the thread held before.

        Raises:
            ValueError: Another ``kbqa chat`` holds it.
        """
        key = lock_key(f"thread {thread}")
        if key == self._held:
            return
        with self._saver.lock:  # the saver's connection is used by one thread at a time
            row = self.conn.execute("select pg_try_advisory_lock(%s) as got", (key,)).fetchone()
            if not (row and row["got"]):
                raise ValueError(
                    f"thread {thread} is open in another kbqa chat; leave that one first"
                )
            if self._held is not None:
                self.conn.execute("select pg_advisory_unlock(%s)", (self._held,))
        self._held = key

    def close(self) -> None:
        """Close the connection, which releases the thread's lock."""
        self.conn.close()
        self._held = None
