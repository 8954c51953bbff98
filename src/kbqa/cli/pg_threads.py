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
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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
"""The tables of ``PostgresSaver``, beside its ``checkpoint_migrations``."""


def redact(url: str) -> str:
    """``url`` without its password (in ``user:password@`` or a ``password=`` parameter), as
    messages show it."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hosts = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}@{hosts}"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query)))


def lock_key(name: str) -> int:
    """The advisory-lock key of ``name``: a signed 64-bit integer (PostgreSQL's ``bigint``)
    from its BLAKE2b hash, so that any thread id maps to one key."""
    digest = hashlib.blake2b(f"kbqa chat {name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def connect_problem(exc: Exception) -> str:
    """What a failed connection says, sorted into the problems a user can fix: the server is
    not reachable, authentication failed, the database does not exist."""
    text = re.sub(r"\s+", " ", str(exc)).strip()
    detail = re.sub(r"^connection failed: |^connection is bad: ", "", text)
    low = text.lower()
    if re.search(r'database ".*" does not exist', low):
        return f"the database does not exist ({detail}); create it first (createdb)"
    if any(s in low for s in ("authentication failed", "no password supplied", "pg_hba.conf",
                              "role \"")):  # fmt: skip
        return f"authentication failed ({detail}); check the user and password in the URL"
    unreachable = ("connection refused", "could not connect", "timeout expired",
                   "failed to resolve", "no route to host", "network is unreachable",
                   "could not translate host")  # fmt: skip
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
            failed; the database does not exist; it holds a ``checkpoints`` table that is not
            LangGraph's; the tables cannot be created. The message names the URL (without its
            password) and the problem, and nothing is changed.
    """

    def __init__(self, url: str) -> None:
        self.where = redact(url)
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
            raise ValueError(f"--db {self.where}: {connect_problem(exc)}") from None
        try:
            self._refuse_foreign_tables()
            self._saver = PostgresSaver(self.conn)
            self.checkpointer: BaseCheckpointSaver[Any] = self._saver
            self._wait_for_setup_lock()
            try:
                self._saver.setup()
            finally:
                self.conn.execute("select pg_advisory_unlock(%s)", (lock_key("setup"),))
        except psycopg.Error as exc:
            self.conn.close()
            problem = re.sub(r"\s+", " ", str(exc)).strip()
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
        """Refuse a database whose ``checkpoints`` table is another program's (setup would
        leave it, then fail or write beside it)."""
        rows = self.conn.execute(
            "select table_name from information_schema.tables where table_schema = current_schema()"
        ).fetchall()
        tables = {str(row["table_name"]) for row in rows}
        if set(LANGGRAPH_TABLES) & tables and "checkpoint_migrations" not in tables:
            theirs = ", ".join(sorted(set(LANGGRAPH_TABLES) & tables))
            raise ValueError(
                f"--db {self.where} holds another program's {theirs} (no checkpoint_migrations); "
                "give kbqa chat a database of its own"
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
