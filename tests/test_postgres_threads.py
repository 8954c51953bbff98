"""Chat threads in PostgreSQL (``kbqa chat --db postgresql://...``, the ``postgres`` extra), with
fake models: two chats at once keep their own histories, which survive the processes; a thread
is open in one chat at a time; bad URLs are refused by name; the Python API keeps threads too.

A throwaway server is started for the session (``initdb`` into a temporary folder with trust
authentication, ``pg_ctl start`` on 127.0.0.1 and a free port) and stopped at the end. The tests
that need it skip, saying why, when the extra or ``initdb``/``pg_ctl`` is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kbqa import KBQA
from kbqa.threads.postgres import redact
from kbqa.threads.sqlite import open_threads

pexpect = pytest.importorskip("pexpect")

KBQA_BIN = str(Path(sys.executable).with_name("kbqa"))
PROMPT = r"(?<!-)> "
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "KBQA_WEB_SEARCH": "off", "COLUMNS": "200",
       "TERM": "dumb"}  # fmt: skip
FAKE = {"embedder": "fake/hash", "cross_check": "off", "web_search": "off", "reading": "joint"}

DHAKA, PARIS = "বাংলাদেশের রাজধানী কোথায়?", "Which river does Paris lie on?"
NOBEL, CURIE = "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", "When did Marie Curie win the Nobel Prize?"
THREAD_A = {DHAKA: "ঢাকা", PARIS: "Seine"}
THREAD_B = {NOBEL: "১৯১৩", CURIE: "1903"}


def _missing() -> str:
    """Why the server cannot be started here ("" when it can)."""
    for module in ("psycopg", "langgraph.checkpoint.postgres"):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"{module} is not installed (pip install 'kbqa[postgres]')"
    for tool in ("initdb", "pg_ctl"):
        if shutil.which(tool) is None:
            return f"{tool} is not on PATH (install PostgreSQL's server binaries)"
    if os.geteuid() == 0 and not _user("postgres"):
        return "initdb refuses to run as root, and there is no postgres user to run it as"
    return ""


def _user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 for the session: its URL without a database
    (``postgresql://kbqa@127.0.0.1:PORT``). User ``kbqa`` is trusted; user ``pwuser`` needs the
    password ``right`` (for the authentication test)."""
    why = _missing()
    if why:
        pytest.skip(f"PostgreSQL tests skipped: {why}")
    # under /tmp with a short name: the server's Unix socket path must stay under 107 bytes
    root = Path(tempfile.mkdtemp(prefix="kbqa-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, user="postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = root / "data", _free_port()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*as_user, *args], capture_output=True, text=True, timeout=120)

    try:
        done = run("initdb", "-D", str(data), "-A", "trust", "-U", "kbqa", "-E", "UTF8",
                   "--no-sync")  # fmt: skip
        assert done.returncode == 0, f"initdb failed: {done.stderr}"
        hba = data / "pg_hba.conf"
        hba.write_text("host all pwuser 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        done = run("pg_ctl", "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60",
                   "-o", options, "start")  # fmt: skip
        log = (root / "log").read_text() if (root / "log").exists() else ""
        assert done.returncode == 0, f"pg_ctl start failed: {done.stderr}\n{log}"
        url = f"postgresql://kbqa@127.0.0.1:{port}"
        _sql(f"{url}/postgres", "create role pwuser login password 'right'")
        yield url
    finally:
        if (data / "postmaster.pid").exists():
            run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)


def _sql(url: str, statement: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        cur = conn.execute(statement)
        return list(cur.fetchall()) if cur.description else []


@pytest.fixture
def pg_db(postgres_server: str) -> str:
    """The URL of a new, empty database on the session's server."""
    name = f"chat_{uuid.uuid4().hex[:8]}"
    _sql(f"{postgres_server}/postgres", f"create database {name}")
    return f"{postgres_server}/{name}"


def _spawn(index: Path, url: str, *extra: str, model: str) -> Any:
    args = ["chat", "--index", str(index), "--embedder", "fake/hash", "--model", model,
            "--db", url, "--cross-check", "off", "--reading", "joint", *extra]  # fmt: skip
    return pexpect.spawn(KBQA_BIN, args, env=ENV, encoding="utf-8", timeout=90,
                         dimensions=(40, 200))  # fmt: skip


def _chat(index: Path, url: str, *args: str, stdin: str = "/quit\n") -> Any:
    return subprocess.run([KBQA_BIN, "chat", "--index", str(index), "--embedder", "fake/hash",
                           "--model", "fake/script:ঢাকা", "--cross-check", "off", "--reading",
                           "joint", "--db", url, *args], capture_output=True, text=True,
                          input=stdin, env=ENV, timeout=120)  # fmt: skip


def _history(index: Path, url: str, thread: str) -> list[str]:
    """The turns ``/history`` shows in a new process resuming ``thread``."""
    done = _chat(index, url, "--thread", thread, "--json", stdin="/history\n/quit\n")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert all(line["thread"] == thread for line in lines)
    return [str(line["message"]) for line in lines]


def test_two_concurrent_chats_keep_their_own_threads_across_restarts(
    both_index: Path, pg_db: str
) -> None:
    # both start at once on an empty database: both set up the tables, neither fails
    first = _spawn(both_index, pg_db, model="fake/script:" + "|".join(THREAD_A.values()))
    second = _spawn(both_index, pg_db, model="fake/script:" + "|".join(THREAD_B.values()))
    threads = []
    for child in (first, second):
        child.expect(r"resume it with: \S*kbqa chat --index \S+ .*?--thread (\w+) --db \S+\r?\n")
        threads.append(str(child.match.group(1)))
        child.expect(PROMPT)
    a, b = threads
    assert a != b
    for qa, qb in zip(THREAD_A, THREAD_B, strict=True):  # both questions in flight at once
        first.sendline(qa)
        second.sendline(qb)
        first.expect(f"answer: {THREAD_A[qa]}")
        second.expect(f"answer: {THREAD_B[qb]}")
        first.expect(PROMPT)
        second.expect(PROMPT)
    first.sendline("/history")
    first.expect(re.escape(f"2. {PARIS}"))
    first.expect(PROMPT)
    for child in (first, second):
        child.sendline("/quit")
        child.expect(pexpect.EOF, timeout=30)
        child.close()
        assert child.exitstatus == 0
    # new processes, after the first two ended: each thread holds exactly its own turns
    for thread, turns in ((a, THREAD_A), (b, THREAD_B)):
        shown = _history(both_index, pg_db, thread)
        want = [f"{i}. {q}\n   -> {ans}" for i, (q, ans) in enumerate(turns.items(), start=1)]
        assert shown == want, (thread, shown)
    # the same, read straight from the checkpoints
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from kbqa.graph import build_graph

    with psycopg.connect(pg_db, autocommit=True, row_factory=dict_row) as conn:
        graph = build_graph(checkpointer=PostgresSaver(conn))
        for thread, turns in ((a, THREAD_A), (b, THREAD_B)):
            history = graph.get_state({"configurable": {"thread_id": thread}}).values["history"]
            assert [(t["question"], t["answer"]) for t in history] == list(turns.items())


def test_a_chat_waiting_for_the_setup_does_not_deadlock_with_its_create_index(
    pg_db: str,
) -> None:
    # Another chat holds the setup lock and builds an index CONCURRENTLY, as PostgresSaver.setup
    # does, while this chat waits for the lock. CREATE INDEX CONCURRENTLY waits for every open
    # transaction: a blocking pg_advisory_lock would be one, and PostgreSQL would abort one side
    # with "deadlock detected" (seen in CI). Polling keeps no transaction open.
    import threading

    import psycopg

    from kbqa.threads.postgres import PostgresThreads, lock_key

    with psycopg.connect(pg_db, autocommit=True) as other:
        other.execute("create table busy (x int)")
        other.execute("select pg_advisory_lock(%s)", (lock_key("setup"),))
        opened: list[Any] = []
        waiting = threading.Thread(target=lambda: opened.append(PostgresThreads(pg_db)))
        waiting.start()
        waiting.join(1.0)  # it is now waiting for the lock
        assert waiting.is_alive()
        other.execute("set statement_timeout = '20s'")
        other.execute("create index concurrently busy_x on busy (x)")  # raised before the fix
        other.execute("select pg_advisory_unlock(%s)", (lock_key("setup"),))
        waiting.join(30)
    assert not waiting.is_alive() and len(opened) == 1
    threads = opened[0]
    rows = _sql(pg_db, "select count(*) as n from checkpoint_migrations")
    assert rows[0]["n"] > 0  # it went on to create the tables
    threads.close()


def test_a_chat_reads_the_tables_only_after_the_setup_of_another(pg_db: str) -> None:
    # CI saw a chat refuse the database as another program's ("it records version 1, but there
    # is no checkpoints") while a second chat was halfway through PostgresSaver.setup: the check
    # read the table list before that chat created checkpoints and the migration count after.
    # Here the halfway view is held still under the setup lock; the chat must wait for the lock
    # and only then look.
    import threading

    import psycopg

    from kbqa.threads.postgres import PostgresThreads, lock_key

    with psycopg.connect(pg_db, autocommit=True) as other:
        other.execute("select pg_advisory_lock(%s)", (lock_key("setup"),))
        other.execute("create table checkpoint_migrations (v integer primary key)")
        other.execute("insert into checkpoint_migrations values (0), (1)")  # checkpoints not yet
        opened: list[Any] = []
        failed: list[BaseException] = []

        def open_() -> None:
            try:
                opened.append(PostgresThreads(pg_db))
            except BaseException as exc:  # reported below
                failed.append(exc)

        waiting = threading.Thread(target=open_)
        waiting.start()
        waiting.join(1.0)
        assert not failed, failed  # refused before the fix
        assert waiting.is_alive()
        other.execute(
            "create table checkpoints (thread_id text not null, checkpoint_ns text not null "
            "default '', checkpoint_id text not null, parent_checkpoint_id text, type text, "
            "checkpoint jsonb not null, metadata jsonb not null default '{}', "
            "primary key (thread_id, checkpoint_ns, checkpoint_id))"
        )
        other.execute("select pg_advisory_unlock(%s)", (lock_key("setup"),))
        waiting.join(30)
    assert not failed, failed
    assert not waiting.is_alive() and len(opened) == 1
    rows = _sql(pg_db, "select max(v) as v from checkpoint_migrations")
    assert rows[0]["v"] > 1  # it went on with the setup from where the other chat left it
    opened[0].close()


def test_a_thread_is_open_in_one_chat_at_a_time(both_index: Path, pg_db: str) -> None:
    done = _chat(both_index, pg_db, "--json", stdin=f"{DHAKA}\n/quit\n")
    assert done.returncode == 0, done.stderr
    thread = json.loads(done.stdout.splitlines()[0])["thread"]
    holder = _spawn(both_index, pg_db, "--thread", thread, model="fake/script:ঢাকা")
    holder.expect(f"resumed thread {thread}")
    holder.expect(PROMPT)
    second = _chat(both_index, pg_db, "--thread", thread)
    assert second.returncode == 2
    assert f"thread {thread} is open in another kbqa chat; leave that one first" in second.stderr
    holder.sendline("/new")  # leaves the thread: it can be opened elsewhere, the new one cannot
    holder.expect(r"new thread (\w+)")
    new = str(holder.match.group(1))
    holder.expect(PROMPT)
    holder.sendline(PARIS)  # a thread exists once it has a question
    holder.expect("answer: ঢাকা")
    holder.expect(PROMPT)
    assert _chat(both_index, pg_db, "--thread", thread).returncode == 0
    taken = _chat(both_index, pg_db, "--thread", new)
    assert taken.returncode == 2 and "open in another kbqa chat" in taken.stderr
    holder.sendline("/quit")
    holder.expect(pexpect.EOF, timeout=30)
    holder.close()
    assert _chat(both_index, pg_db, "--thread", new).returncode == 0  # released at exit
    unknown = _chat(both_index, pg_db, "--thread", "nope")
    assert unknown.returncode == 2 and "no thread 'nope' in postgresql://kbqa@" in unknown.stderr


def test_bad_urls_are_refused_by_name_and_change_nothing(
    both_index: Path, postgres_server: str
) -> None:
    host = postgres_server.rpartition("@")[2]  # 127.0.0.1:PORT
    port = _free_port()
    cases = [
        (f"postgresql://kbqa:hunter2@127.0.0.1:{port}/chat", "the server is not reachable"),
        (f"postgres://kbqa:hunter2@{host}/no_such_db", "the database does not exist"),
        (f"postgresql://pwuser:hunter2@{host}/postgres", "authentication failed"),
    ]
    for url, problem in cases:
        done = _chat(both_index, url)
        assert done.returncode == 2, done.stderr
        assert f"--db {url.replace(':hunter2', '')}: {problem}" in done.stderr, done.stderr
        assert "hunter2" not in done.stderr + done.stdout
    names = {r["datname"] for r in _sql(f"{postgres_server}/postgres",
                                         "select datname from pg_database")}  # fmt: skip
    assert "no_such_db" not in names
    tables = _sql(f"{postgres_server}/postgres", "select tablename from pg_tables "
                  "where tablename like 'checkpoint%'")  # fmt: skip
    assert tables == []  # the refused runs created nothing, even where they could connect


def test_another_programs_checkpoints_table_is_refused(both_index: Path, pg_db: str) -> None:
    _sql(pg_db, "create table checkpoints (id integer, payload text)")
    done = _chat(both_index, pg_db)
    assert done.returncode == 2 and "another program's checkpoints" in done.stderr
    tables = {r["tablename"] for r in _sql(pg_db, "select tablename from pg_tables "
                                                  "where schemaname = 'public'")}  # fmt: skip
    assert tables == {"checkpoints"}


def _snapshot(url: str) -> dict[str, list[dict[str, Any]]]:
    """Each table of ``url``'s public schema: its columns, then its rows."""
    tables = sorted(r["tablename"] for r in _sql(url, "select tablename from pg_tables "
                                                      "where schemaname = 'public'"))  # fmt: skip
    return {
        t: _sql(url, "select column_name, data_type from information_schema.columns where "
                f"table_name = '{t}' order by ordinal_position")
        + _sql(url, f"select * from {t} order by 1")
        for t in tables
    }  # fmt: skip


@pytest.mark.parametrize(
    ("tables", "problem"),
    [
        (["create table checkpoint_migrations (v text)",
          "insert into checkpoint_migrations values ('mine')"],
         "another program's checkpoint_migrations (its v column is not an integer)"),
        (["create table checkpoint_writes (a int)",
          "create table checkpoint_migrations (v int primary key)",
          "insert into checkpoint_migrations values (0)"],
         "another program's checkpoint_writes (it has no thread_id, checkpoint_ns, "
         "checkpoint_id, task_id, idx, channel, type, blob column)"),
        (["create table checkpoint_migrations (v int primary key)",
          "insert into checkpoint_migrations values (0), (1), (2)"],
         "another program's checkpoint_migrations (it records version 2, but there is no "
         "checkpoints, checkpoint_blobs)"),
        (["create table checkpoint_blobs (thread_id text, checkpoint_ns text, blob bytea)"],
         "another program's checkpoint_blobs (it has no channel, version, type column)"),
    ],
)  # fmt: skip
def test_another_programs_migrations_or_tables_are_refused_and_left_as_they_were(
    both_index: Path, pg_db: str, tables: list[str], problem: str
) -> None:
    for statement in tables:
        _sql(pg_db, statement)
    before = _snapshot(pg_db)
    done = _chat(both_index, pg_db)
    assert done.returncode == 2, done.stderr
    assert f"--db {pg_db} holds {problem}; give kbqa chat a database of its own" in done.stderr
    assert "Traceback" not in done.stderr
    assert _snapshot(pg_db) == before  # no table created, no migration recorded


def test_langgraphs_own_tables_are_used_again(pg_db: str) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    from kbqa.threads.postgres import PostgresThreads

    with psycopg.connect(pg_db, autocommit=True, row_factory=dict_row) as conn:
        PostgresSaver(conn).setup()  # as another LangGraph program would
    before = _snapshot(pg_db)
    PostgresThreads(pg_db).close()
    assert _snapshot(pg_db) == before


def test_the_python_api_keeps_threads_in_postgres(both_index: Path, pg_db: str) -> None:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver
    from psycopg.rows import dict_row

    model = "fake/script:ঢাকা|১৯১৩|Seine"
    with psycopg.connect(pg_db, autocommit=True, row_factory=dict_row) as conn:
        saver = PostgresSaver(conn)
        saver.setup()
        qa = KBQA.from_index(both_index, model=model, checkpointer=saver, **FAKE)
        assert qa.ask(DHAKA, thread_id="a").answer == "ঢাকা"
        assert qa.ask(NOBEL, thread_id="b").answer == "১৯১৩"
        assert qa.ask(PARIS, thread_id="a").answer == "Seine"
        with pytest.raises(ValueError, match="give each question a thread_id"):
            qa.ask(DHAKA)
    with psycopg.connect(pg_db, autocommit=True, row_factory=dict_row) as conn:  # a new client
        again = KBQA.from_index(both_index, load=False, checkpointer=PostgresSaver(conn), **FAKE)
        assert [(t["question"], t["answer"]) for t in again.history("a")] == [
            (DHAKA, "ঢাকা"),
            (PARIS, "Seine"),
        ]
        assert [t["question"] for t in again.history("b")] == [NOBEL]
        assert again.history("c") == []


def test_without_the_extra_the_url_is_refused_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, both_index: Path
) -> None:
    monkeypatch.setitem(sys.modules, "langgraph.checkpoint.postgres", None)
    with pytest.raises(ValueError, match=r"pip install 'kbqa\[postgres\]'") as caught:
        open_threads("postgresql://kbqa:hunter2@127.0.0.1:5432/chat")
    assert "--db postgresql://kbqa@127.0.0.1:5432/chat" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    with pytest.raises(ValueError, match="needs a checkpointer"):
        KBQA.from_index(both_index, load=False, **FAKE).ask(DHAKA, thread_id="a")


def test_the_password_never_shows_in_a_message(both_index: Path, postgres_server: str) -> None:
    host = postgres_server.rpartition("@")[2]
    cases = [  # libpq quotes the token it cannot read: the password, written or decoded
        (f"postgresql://kbqa:top%ZZsecret99@{host}/chat", f"postgresql://kbqa@{host}/chat",
         "cannot connect (invalid percent-encoded token"),
        (f"postgresql://kbqa:top secret99@{host}/chat", f"postgresql://kbqa@{host}/chat",
         "cannot connect (unexpected spaces found in"),
        (f"postgresql://kbqa@{host}/chat?password=top%ZZsecret99&sslmode=disable",
         f"postgresql://kbqa@{host}/chat?sslmode=disable",
         "cannot connect (invalid percent-encoded token"),
        ("postgresql://kbqa:top%ZZsecret99@[::1/chat", "postgresql://kbqa@[::1/chat",
         "not a valid URL (Invalid IPv6 URL)"),
        (f"postgresql://kbqa:top?se#cret99@{host}/no_such_db",  # libpq keeps ? and # in it
         f"postgresql://kbqa@{host}/no_such_db", "the database does not exist"),
    ]  # fmt: skip
    for url, where, problem in cases:
        done = _chat(both_index, url)
        assert done.returncode == 2, done.stderr
        assert f"--db {where}: {problem}" in done.stderr, done.stderr
        out = done.stderr + done.stdout
        assert "cret99" not in out, out


def test_scrub_hides_every_form_of_the_password() -> None:
    from kbqa.threads.postgres import scrub, secrets

    hidden = secrets("postgresql://u:a%20b@h/d?password=c+d&password=e%27f")
    assert {"a%20b", "a b", "c+d", "c d", "e%27f", "e'f", "e\\'f"} <= hidden
    assert scrub('bad "a b" and "c d"\n and e\\\'f', hidden) == 'bad "***" and "***" and ***'
    assert scrub("password  a   b", secrets("postgres://u:a   b@h")) == "password ***"
    assert secrets("postgres://u@h/d") == set()


def test_a_short_password_is_hidden_where_it_stands_alone_not_inside_words() -> None:
    from kbqa.threads.postgres import scrub, secrets

    hidden = secrets("postgresql://u:a@h/d")
    message = 'password authentication failed for user "u" (password a, conninfo password=a)'
    assert scrub(message, hidden) == (
        'password authentication failed for user "u" (password ***, conninfo password=***)'
    )
    assert scrub("x=a;", secrets("postgresql://u:%3D@h/d")) == "x***a;"


def test_urls_lose_their_password_and_other_schemes_are_refused(tmp_path: Path) -> None:
    assert redact("postgresql://u:p@h:1/d?sslmode=require&password=p") == (
        "postgresql://u@h:1/d?sslmode=require"
    )
    assert redact("postgres://h/d") == "postgres://h/d"
    with pytest.raises(ValueError, match="SQLite file or in PostgreSQL"):
        open_threads("mysql://u@h/d")
    store = open_threads(tmp_path / "chat.sqlite")  # a path is still a SQLite file
    store.close()
    assert (tmp_path / "chat.sqlite").is_file()


def test_the_resume_command_keeps_the_store_and_drops_the_password() -> None:
    from kbqa.cli.chat import _resume_command
    from kbqa.context import Context

    shown = _resume_command(
        Context(index_dir="idx"), "postgresql://kb:s3cret@127.0.0.1:5433/chat", "t1"
    )
    assert shown == "kbqa chat --index idx --thread t1 --db postgresql://kb@127.0.0.1:5433/chat"
    # the other parameters keep their own encoding (libpq reads no "+" as a space)
    odd = "postgresql://kb@h/db?application_name=a%20b&password=s3cret&options=-c%20x%3Dy"
    assert redact(odd) == "postgresql://kb@h/db?application_name=a%20b&options=-c%20x%3Dy"
    assert _resume_command(Context(index_dir="milvus://kb.db"), "my chats.sqlite", "t2") == (
        "kbqa chat --index milvus://kb.db --thread t2 --db 'my chats.sqlite'"
    )


def test_the_resume_command_keeps_every_setting_that_is_not_the_default() -> None:
    from kbqa.cli.chat import _resume_command
    from kbqa.context import Context

    ctx = Context(index_dir="idx", reranker="lexical", rerank_pool=12, k=4, cross_check="off")
    shown = _resume_command(ctx, None, "t3")
    assert shown.startswith("kbqa chat --index idx ") and shown.endswith(" --thread t3")
    for words in ("--reranker lexical", "--rerank-pool 12", "--k 4", "--cross-check off"):
        assert words in shown
    assert "--rerank-weight" not in shown  # a default is left out


def test_the_resume_command_keeps_the_model_and_the_english_reader() -> None:
    from kbqa.cli.chat import _resume_command
    from kbqa.context import Context

    ctx = Context(index_dir="idx", model="fake/script:BN", model_en="fake/script:EN")
    shown = _resume_command(ctx, None, "t4")
    assert "--model fake/script:BN" in shown and "--model-en fake/script:EN" in shown
    assert "--model " not in _resume_command(Context(index_dir="idx"), None, "t5")
