"""``kbqa chat``: a conversation in the terminal, with the answer streamed as it is generated,
the running node shown, citations, slash commands and threads that persist in SQLite (or in
PostgreSQL: ``--db postgresql://...``).

Threads are LangGraph checkpoints (:mod:`kbqa.threads.sqlite`): each question runs the graph
on the thread's state, so its ``history`` grows and a follow-up is rewritten to stand alone
(:mod:`kbqa.answers.followup`). ``kbqa chat --thread ID`` resumes one. Ctrl-C stops the answer
being generated, not the session; Ctrl-D (or ``/quit``) leaves.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Annotated, Any

import typer

from kbqa.answers.explain import abstention_reason, extractor_note, reader_note, retrieval_note
from kbqa.cli.app import app, fail
from kbqa.cli.ask import PASSAGES_READ, WEB_SEARCH_OFF, load_models, make_context, reachable
from kbqa.cli.chat_commands import run_command
from kbqa.cli.settings import context_options, option_args
from kbqa.context import Context
from kbqa.state import RESET
from kbqa.text import escape_controls
from kbqa.threads.sqlite import open_threads

STREAMED = ("generate", "verify", "fallback", "web_search")
"""Nodes whose model output is streamed as it is generated."""


class Session:
    """One chat: the settings, the threaded graph and the current thread.

    Args:
        ctx: The graph's settings (:class:`~kbqa.context.Context`).
        db: Where threads are kept: a SQLite file (created when missing), a
            ``postgresql://`` URL, or None for ``~/.cache/kbqa/chat.sqlite``.
        thread: The thread to resume, or "" for a new one.
        as_json: Print one JSON object per answer instead of the streamed view.

    Raises:
        ValueError: ``thread`` names a thread ``db`` does not hold; ``db`` cannot be used (see
            :func:`~kbqa.threads.sqlite.open_threads`); the thread is open in another
            ``kbqa chat``.
    """

    def __init__(
        self, ctx: Any, db: str | Path | None, thread: str = "", *, as_json: bool = False
    ) -> None:
        from rich.console import Console

        from kbqa.graph import build_graph

        self.store = open_threads(db)
        try:
            self.graph = build_graph(checkpointer=self.store.checkpointer)
            self.ctx = ctx
            self.as_json = as_json
            self.console = Console(highlight=False, soft_wrap=True)
            self.last: dict[str, Any] = {}
            self.told_web_off = False  # the web-search note is said once per chat
            if thread and not self.values(thread):
                raise ValueError(
                    f"no thread {thread!r} in {self.store.where} (start one with kbqa chat)"
                )
            self.thread = thread or uuid.uuid4().hex[:8]
            self.store.hold(self.thread)
            if thread:  # read again now that no other chat can write it
                self.last = self.values(thread)
        except self.store.errors as exc:  # the database failed under a read
            self.store.close()
            raise ValueError(f"--db {self.store.where}: {exc}") from None
        except BaseException:
            self.store.close()
            raise

    def config(self, thread: str | None = None) -> Any:
        """The run config of ``thread`` (default: the current one)."""
        return {"configurable": {"thread_id": thread or self.thread}}

    def values(self, thread: str | None = None) -> dict[str, Any]:
        """The thread's state (empty for a thread with no question yet)."""
        return dict(self.graph.get_state(self.config(thread)).values)

    def say(self, text: str, style: str = "", *, soft_wrap: bool = False) -> None:
        """Print a message (with ``--json``: one JSON object, ``error`` for a red one, else
        ``message``, so a script gets one line back for every line it sent). ``soft_wrap``
        leaves the line whole for the terminal to wrap, so a command in it copies as one."""
        if self.as_json:
            key = "error" if style == "red" else "message"
            typer.echo(json.dumps({"thread": self.thread, key: text}, ensure_ascii=False))
        else:
            self.console.print(text, style=style or None, markup=False, soft_wrap=soft_wrap)

    def ask(self, question: str) -> None:
        """Run the graph on ``question`` in the thread, streaming; Ctrl-C stops it."""
        import signal

        from kbqa.llm.cancel import CANCEL

        def stop(signum: int, frame: Any) -> None:
            CANCEL.set()  # the reader stops at its next token, so the run ends at once
            raise KeyboardInterrupt

        CANCEL.clear()
        previous = signal.signal(signal.SIGINT, stop)
        try:
            self._ask(question)
        finally:
            signal.signal(signal.SIGINT, previous)
            CANCEL.clear()

    def _ask(self, question: str) -> None:
        from kbqa.api import stream_events

        streaming = False
        try:
            for event in stream_events(self.graph, question, self.config(), self.ctx):
                if self.as_json or event.kind == "answer":
                    continue
                if event.kind == "token":
                    if event.node in STREAMED:
                        if not streaming:
                            self.console.print(
                                f"  {event.node}: ", end="", style="dim", markup=False
                            )
                            streaming = True
                        self.console.print(event.text, end="", markup=False)
                    continue
                if streaming:
                    self.console.print()
                    streaming = False
                note = " ".join(
                    r for r in event.update.get("route", [])[1:] if isinstance(r, str) and ":" in r
                )
                node = event.node
                line = note if note.startswith(f"{node}:") else f"{node} {note}".rstrip()
                self.console.print(f"  · {line}", style="dim", markup=False)
        except KeyboardInterrupt:
            if streaming:
                self.console.print()
            self.say("(stopped)", "yellow")
            return
        from kbqa.llm.cancel import CANCEL

        if CANCEL.is_set():  # stopped, but the run went on with the cut answer: drop that turn
            if streaming:
                self.console.print()
            history = self.values().get("history", [])
            self.graph.update_state(self.config(), {"history": [RESET, *history[:-1]]})
            self.say("(stopped)", "yellow")
            return
        self.last = self.values()
        self.note_web_search_off()
        if self.as_json:
            out = {
                k: self.last.get(k)
                for k in (
                    "question",
                    "asked",
                    "answer",
                    "abstained",
                    "answered_by",
                    "reader_answer",
                    "extracted_answer",
                    "abstention_probability",
                    "readings",
                    "sources",
                    "route",
                    "timings",
                )
            }
            out["why"] = abstention_reason(self.last)  # as `kbqa ask --json`
            typer.echo(json.dumps({"thread": self.thread, **out}, ensure_ascii=False))
            return
        self.show_answer()

    def note_web_search_off(self) -> None:
        """Say on stderr, the first time a question of this chat ends unanswered with web search
        off, that it stayed on this machine (as ``kbqa ask`` does for its one question)."""
        out = self.last
        if self.told_web_off or not out.get("abstained") or self.ctx.web_search != "off":
            return
        if "web_search" in reachable(out):
            typer.echo(WEB_SEARCH_OFF, err=True)
            self.told_web_off = True

    def show_answer(self) -> None:
        """The answer, why it was abstained on, the reader's own answer when a later stage
        replaced it (:mod:`kbqa.answers.explain`), the first three sources and the retrieval
        line of ``kbqa ask`` (a reranker, or a dense part not built yet)."""
        out = self.last
        if out.get("asked"):
            self.say(f"  (understood as: {out['question']})", "dim")
        self.console.print(f"answer: {out.get('answer', '')}", style="bold", markup=False)
        why = abstention_reason(out)
        for note in (f"why: {why}" if why else None, reader_note(out), extractor_note(out)):
            if note:
                self.say(f"  {note}", "dim")
        if out.get("abstained") and out.get("sources"):
            self.say(f"  {PASSAGES_READ}", "dim")
        self.show_sources(limit=3)
        note = retrieval_note(out, self.ctx.index_dir)
        if note:
            self.say(f"  {note}", "dim")

    def show_sources(self, limit: int | None = None) -> None:
        out = self.last
        if not out:
            self.say("no answer yet")
            return
        for i, src in enumerate(out.get("sources", [])[:limit], start=1):
            where = escape_controls(src["url"] or f"doc {src['doc_id']}")
            self.say(f"  [{i}] {escape_controls(src['title'] or src['doc_id'])} ({where})")
            sentence = self.sentence(src)
            if sentence:
                self.say(f"      “{sentence}”", "dim")

    def sentence(self, src: dict[str, Any]) -> str:
        """The sentence of a cited chunk that holds the answer ("" when none, or abstained)."""
        from kbqa.answers.extract import sentences
        from kbqa.answers.snap import grounded
        from kbqa.resources import retriever_for

        if self.last.get("abstained") or src["chunk_id"] < 0:
            return ""
        try:
            sub = self.last.get("context_index") or None
            text = retriever_for(self.ctx, sub).chunks[src["chunk_id"]].text
        except Exception:  # an index that changed under a resumed thread: no sentence
            return ""
        answer = str(self.last.get("answer", ""))
        return next((s.strip() for s in sentences(text) if grounded(answer, [s])), "")

    def command(self, line: str) -> bool:
        """Run a slash command (:func:`kbqa.cli.chat_commands.run_command`); False when the
        session should end."""
        return run_command(self, line)


def read_line(interactive: bool) -> str:
    """One line from the user: on a terminal with line editing and history (GNU readline, as
    Python's ``input`` gives it), else from stdin.

    Raises:
        EOFError: Ctrl-D or the end of input.
        KeyboardInterrupt: Ctrl-C at the prompt.
    """
    if interactive:
        return input("> ")
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _store(db: str | None) -> str:
    """The thread store as the banner shows it: a path, or a URL without its password."""
    from kbqa.threads.postgres import redact
    from kbqa.threads.sqlite import POSTGRES_SCHEMES, default_db

    if db is None:
        return str(default_db())
    return redact(db) if db.startswith(POSTGRES_SCHEMES) else db


def _resume_command(ctx: Context, db: str | None, thread: str) -> str:
    """The command that resumes ``thread``: the same index, every setting that is not its
    default (``--reranker``, ``--k``, ...) and, when not the default, the same ``--db`` (a
    PostgreSQL password is left out; libpq reads it from ``PGPASSWORD`` or ``~/.pgpass``)."""
    import shlex
    from dataclasses import MISSING, fields

    defaults: dict[str, Any] = {}
    for f in fields(Context):
        if f.default is not MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not MISSING:  # the model, the web search: read from $KBQA_*
            defaults[f.name] = f.default_factory()
    changed = {
        name: value
        for name, value in ctx.settings().items()
        if name != "index_dir" and name in defaults and value != defaults[name]
    }
    program = sys.argv[0] if Path(sys.argv[0]).name == "kbqa" else "kbqa"  # .venv/bin/kbqa
    words = [program, "chat", "--index", ctx.index_dir, *option_args(changed), "--thread", thread]
    if db is not None:
        words += ["--db", _store(db)]
    return shlex.join(words)


@app.command()
@context_options()
def chat(
    thread: Annotated[
        str, typer.Option("--thread", help="Resume this thread (its id is printed at the start).")
    ] = "",
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            help="Where threads are kept: a SQLite file, or a postgresql://user@host:port/dbname "
            "URL (the postgres extra) \\[default: ~/.cache/kbqa/chat.sqlite]",  # \\[: rich markup
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per answer (for scripts).")
    ] = False,
    *,
    settings: dict[str, Any],
) -> None:
    """Chat with an index: answers stream as they are generated, follow-ups are understood,
    and threads persist (`/help` lists the commands)."""
    from kbqa.errors import KBQAError

    if db is not None and not db.strip():
        fail(
            "--db is empty: give a SQLite file or a postgresql:// URL, or leave --db out "
            "for ~/.cache/kbqa/chat.sqlite"
        )
    ctx = make_context(settings)
    try:
        load_models(ctx)
        session = Session(ctx, db, thread, as_json=as_json)
    except (KBQAError, ValueError) as exc:
        fail(str(exc))
    interactive = sys.stdin.isatty() and not as_json
    if interactive:
        import readline  # noqa: F401  (line editing and history for input())
    if not as_json:
        resumed = f"resumed thread {thread}" if thread else f"thread {session.thread}"
        session.say(
            f"kbqa chat: {ctx.index_dir}, {ctx.readers_said()}, {resumed} in {_store(db)}; "
            "/help for commands, Ctrl-D to leave",
            soft_wrap=True,
        )
        command = _resume_command(ctx, db, session.thread)
        session.say(f"resume it with: {command}", style="dim", soft_wrap=True)
    recoverable: tuple[type[Exception], ...] = (KBQAError, ValueError, *session.store.errors)
    try:  # SIGTERM exits through here too (kbqa.cli.app.main), releasing the thread
        while True:
            try:
                line = read_line(interactive).strip()
            except KeyboardInterrupt:
                continue
            except EOFError:
                break
            if not line:
                continue
            try:  # a command reads the database too (/history): its errors are one line
                if line.startswith("/"):
                    if not session.command(line):
                        break
                    continue
                session.ask(line)
            except recoverable as exc:
                session.say(f"error: {exc}", "red")
    finally:
        session.store.close()
