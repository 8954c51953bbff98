"""The ``kbqa`` Typer application, its global options, and what every command shares: an error
that names the problem and exits 2, and Ctrl-C-like handling of SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
from typing import Annotated, NoReturn

import typer
from typer.core import TyperGroup

COMMAND_ORDER = ("crawl", "index", "ask", "chat", "eval", "finetune")
"""``kbqa --help`` lists the commands in pipeline order."""


class _PipelineOrder(TyperGroup):
    def list_commands(self, ctx: object) -> list[str]:
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(self.commands, key=lambda name: (rank.get(name, len(rank)), name))


app = typer.Typer(
    cls=_PipelineOrder,
    add_completion=False,
    no_args_is_help=True,
    help="Knowledge-base question answering: hybrid BM25 + dense retrieval, a local GGUF LLM.",
)


def _print_version(value: bool) -> None:
    if value:
        from kbqa.version import __version__

        typer.echo(f"kbqa {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    logging.getLogger("kbqa").setLevel(logging.INFO if verbose else logging.WARNING)
    # trafilatura logs an ERROR for every page it finds no main text in (the crawl report
    # already counts them); show its lines only with -v
    logging.getLogger("trafilatura").setLevel(logging.WARNING if verbose else logging.CRITICAL)


def fail(message: str) -> NoReturn:
    """Print ``error: message`` in red on stderr and exit with status 2."""
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


def _below_warning_from_bm25s(record: logging.LogRecord) -> bool:
    """A handler filter: bm25s sets its own logger to DEBUG when it is imported (after this
    process set it to WARNING) and logs each build step."""
    return not (record.name.startswith("bm25s") and record.levelno < logging.WARNING)


def main() -> None:
    """Console-script entry point."""
    import kbqa.cli  # noqa: F401  (registers every command on the app)

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_below_warning_from_bm25s)
    # SIGTERM (and SIGHUP, a closed terminal) unwinds like Ctrl-C, so half-written temporary
    # files are removed and a chat releases its thread.
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda signum, frame: sys.exit(128 + signum))
    app()
