"""``kbqa chat``'s slash commands: ``/help``, ``/sources``, ``/route``, ``/k N``, ``/model M``,
``/new``, ``/history``, ``/quit``. Each is a function of the chat session and the command's
argument, found in :data:`COMMANDS`; adding one is adding a function, a table entry and a
:data:`HELP` line."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol


class Session(Protocol):
    """What a command reads and changes of ``kbqa chat``'s session
    (:class:`kbqa.cli.chat.Session`)."""

    ctx: Any
    thread: str
    store: Any
    last: dict[str, Any]

    def say(self, text: str, style: str = "", *, soft_wrap: bool = False) -> None: ...

    def show_sources(self, limit: int | None = None) -> None: ...

    def values(self, thread: str | None = None) -> dict[str, Any]: ...


HELP = """commands:
  /sources   the passages of the last answer, with the sentence it came from
  /route     the nodes the last question went through, with seconds per node
  /k N       retrieve N chunks from now on
  /model M   answer with model M from now on (a registered name or a .gguf path)
  /new       start a new thread
  /history   the questions and answers of this thread
  /help      this list
  /quit      leave (or Ctrl-D); Ctrl-C stops an answer being generated"""


def show_help(session: Session, arg: str) -> None:
    """``/help``: the commands."""
    session.say(HELP)


def show_sources(session: Session, arg: str) -> None:
    """``/sources``: the last answer's passages with the sentence it came from."""
    session.show_sources()


def show_route(session: Session, arg: str) -> None:
    """``/route``: the nodes the last question went through, with seconds per node."""
    session.say(" -> ".join(session.last.get("route", [])) or "no question yet")
    for t in session.last.get("timings", []):
        session.say(f"  {t['node']:<17} {t['seconds']:.3f} s")


def new_thread(session: Session, arg: str) -> None:
    """``/new``: start a new thread (and hold it)."""
    session.thread = uuid.uuid4().hex[:8]
    session.store.hold(session.thread)
    session.last = {}
    session.say(f"new thread {session.thread}")


def show_history(session: Session, arg: str) -> None:
    """``/history``: the thread's questions (with their rewrite) and answers."""
    turns = session.values().get("history", [])
    for i, turn in enumerate(turns, start=1):
        asked = turn.get("asked") or turn["question"]
        meant = f" (understood as: {turn['question']})" if turn.get("asked") else ""
        session.say(f"{i}. {asked}{meant}\n   -> {turn['answer']}")
    if not turns:
        session.say("no questions in this thread yet")


def set_setting(session: Session, name: str, value: str) -> None:
    """Change one setting for the rest of the session, checked like a command-line option
    (``/k``, ``/model``); a bad value is named and nothing changes."""
    from kbqa.errors import KBQAError

    try:
        if name == "k" and not value.strip().isdigit():
            raise ValueError(f"k must be a positive integer, got {value!r}")
        typed: Any = int(value) if name == "k" else value
        ctx = replace(session.ctx, **{name: typed})
        if name == "model":
            load_models_quietly(ctx)
    except (ValueError, KBQAError) as exc:
        session.say(f"{name} not changed: {exc}", "red")
        return
    session.ctx = ctx
    session.say(f"{name} = {typed}")


def load_models_quietly(ctx: Any) -> None:
    """Load a newly chosen model now, so a misspelt name is refused at once.

    Raises:
        ModelError: The name or path cannot load.
    """
    from kbqa.errors import ModelError
    from kbqa.resources import preload

    problem = preload(ctx)
    if problem:
        raise ModelError(problem)


COMMANDS: dict[str, Callable[[Session, str], None]] = {
    "/help": show_help,
    "/sources": show_sources,
    "/route": show_route,
    "/k": lambda session, arg: set_setting(session, "k", arg),
    "/model": lambda session, arg: set_setting(session, "model", arg),
    "/new": new_thread,
    "/history": show_history,
}
"""Slash command -> ``(session, argument) -> None``."""
QUIT = ("/quit", "/exit")


def run_command(session: Session, line: str) -> bool:
    """Run the slash command ``line``; False when the session should end (``/quit``)."""
    name, _, arg = line.partition(" ")
    if name in QUIT:
        return False
    command = COMMANDS.get(name)
    if command is None:
        session.say(f"unknown command {name}; /help lists them", "red")
    else:
        command(session, arg.strip())
    return True
