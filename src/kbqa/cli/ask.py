"""``kbqa ask``: answer one question from an index, with sources and the route taken."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from kbqa.answers.explain import abstention_reason, extractor_note, reader_note, retrieval_note
from kbqa.cli.app import app, fail
from kbqa.cli.settings import context_options
from kbqa.errors import KBQAError
from kbqa.text import escape_controls, is_blank

WEB_SEARCH_OFF = (
    "note: web search is off, so the question stayed on this machine; --web-search ddgs "
    "(or KBQA_WEB_SEARCH=ddgs) sends what the index cannot answer to DuckDuckGo"
)
"""Said once, on stderr, when a question ends unanswered with web search off (the default);
once per session in ``kbqa chat``."""


def reachable(out: dict[str, Any]) -> set[str]:
    """Stages an abstention could still have gone to: none when finalize itself refused an
    ungrounded answer (nothing runs after finalize)."""
    return set() if "finalize: ungrounded" in out.get("route", []) else {"web_search"}


def make_context(settings: dict[str, Any]) -> Any:
    """``Context(**settings)`` with the files it names checked
    (:meth:`~kbqa.context.Context.check_paths`), or exit with the error that names the bad
    value."""
    from kbqa.context import Context

    try:
        ctx = Context(**settings)
        ctx.check_paths()
    except ValueError as exc:
        fail(str(exc))
    return ctx


def out_of_memory(exc: MemoryError, ctx: Any) -> str:
    """The error for a model or context window that does not fit in memory."""
    return (
        f"not enough memory to load the model with a {ctx.n_ctx}-token context window "
        f"({exc or 'MemoryError'}); a smaller --n-ctx needs less"
    )


def load_models(ctx: Any) -> None:
    """Load the index, the reader and (when on) the verifier before the first question
    (:func:`kbqa.resources.preload`); a reader that cannot load is a warning (the pattern
    extractor answers)."""
    from kbqa.resources import preload

    problem = preload(ctx)
    if problem:
        typer.echo(
            f"warning: LLM unavailable ({problem}); answering with the pattern extractor", err=True
        )
    warn_fallback_unavailable(ctx)


def warn_fallback_unavailable(ctx: Any) -> None:
    """Say on stderr when ``--fallback`` is on over an index with no precision part (the
    route would only record ``fallback: unavailable``)."""
    from kbqa.errors import KBQAError
    from kbqa.resources import has_strategy_at

    if not ctx.fallback or ctx.retriever is not None:
        return
    if "://" not in ctx.index_dir and not Path(ctx.index_dir).is_dir():
        return  # no index there: loading it says so
    try:
        missing = not has_strategy_at(ctx.index_dir, "precision")
    except (KBQAError, OSError):  # no index at all: loading it says so
        return
    if missing:
        typer.echo(
            f"warning: --fallback is on, but {ctx.index_dir} has no precision part, so "
            "the fallback will not run (build one with kbqa index KB --strategy both)",
            err=True,
        )


@app.command()
@context_options()
def ask(
    question: Annotated[
        str, typer.Argument(help="The question, in Bangla, English or another language.")
    ],
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the whole graph output as JSON, with `why`: the abstention's reason.",
        ),
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also print the seconds of every node run.")
    ] = False,
    *,
    settings: dict[str, Any],
) -> None:
    """Answer one question from an index, with sources and the route taken."""
    from kbqa.api import stream_events
    from kbqa.graph import graph
    from kbqa.tracing import flush_traces

    if is_blank(question):
        fail("question is empty: ask a non-empty question")
    ctx = make_context(settings)
    try:
        t0 = time.perf_counter()
        load_models(ctx)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        events = stream_events(graph, question, None, ctx)
        out = next(e.answer.output for e in events if e.answer is not None)
        total_s = time.perf_counter() - t0
    except (KBQAError, ValueError) as exc:
        fail(str(exc))
    except MemoryError as exc:
        fail(out_of_memory(exc, ctx))
    finally:
        flush_traces()
    if out.get("abstained") and ctx.web_search == "off" and "web_search" in reachable(out):
        typer.echo(WEB_SEARCH_OFF, err=True)
    if as_json:
        # "why": the reason printed as `why:` (null for an answer or no known reason)
        typer.echo(json.dumps({**out, "why": abstention_reason(out)}, ensure_ascii=False, indent=2))
        return
    print_answer(out, ctx.index_dir)
    if ctx.reader_for("en") != ctx.reader_for(None):  # two readers: say which one read it
        model, adapter = ctx.reader_for(out.get("language"))
        typer.echo(f"reader: {f'{model} + {adapter}' if adapter else model}")
    if verbose:
        typer.echo("timings:")
        for t in out.get("timings", []):
            typer.echo(f"  {t['node']:<17} {t['seconds']:.3f} s")
    # --no-llm reads with the pattern extractor: no model is loaded or called
    reading, loaded = ("llm", "index and model") if ctx.use_llm else ("extractor", "index")
    read_s = _seconds(out, "generate", "extract", "verify", "fallback", "web_search")
    typer.echo(
        f"time: retrieval {duration(_seconds(out, 'retrieve', 'retry'))}, "
        f"{reading} {duration(read_s)}, "
        f"total {duration(total_s)} (+ {load_s:.1f} s loading {loaded})"
    )


def _seconds(out: dict[str, Any], *nodes: str) -> float:
    return float(sum(t["seconds"] for t in out.get("timings", []) if t["node"] in nodes))


def duration(seconds: float) -> str:
    """``seconds`` for a person: milliseconds below a tenth of a second (BM25 retrieval takes
    about half a millisecond, which ``0.00 s`` hid), else seconds to two decimals."""
    return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else f"{seconds:.2f} s"


PASSAGES_READ = "passages read (no answer found in them):"
"""The heading of an abstention's passages in ``kbqa ask`` and ``kbqa chat`` (``sources:`` for an
answer): they are where the reader looked, not a citation, and saying they hold no answer would
be wrong when the reader missed one (a new user's finding)."""


def print_answer(out: dict[str, Any], index_dir: str) -> None:
    """The answer, whether it abstained and why (:func:`~kbqa.answers.explain.abstention_reason`),
    the reader's own answer when a later stage replaced it, its numbered sources (for an
    abstention, the passages it read: :data:`PASSAGES_READ`), the route, and the retrieval
    when a reranker ordered its pool."""
    typer.echo(f"answer: {out['answer']}")
    typer.echo(f"abstained: {str(out['abstained']).lower()}")
    why = abstention_reason(out)
    for note in (f"why: {why}" if why else None, reader_note(out), extractor_note(out)):
        if note:
            typer.echo(note)
    # an abstention cites nothing: its passages are where the reader looked
    if out.get("abstained") and not out.get("sources"):
        typer.echo("passages read: none")
    else:
        typer.echo(PASSAGES_READ if out.get("abstained") else "sources:")
    for i, src in enumerate(out.get("sources", []), start=1):
        where = f" <{escape_controls(src['url'])}>" if src["url"] else ""
        doc = escape_controls(src["doc_id"])  # a file name may hold a newline
        typer.echo(
            f"  [{i}] {escape_controls(src['title']) or doc} "
            f"(doc {doc}, chunk {src['chunk_id']}, score {src['score']:.3f}){where}"
        )
    typer.echo(f"route: {' -> '.join(out.get('route', []))}")
    if out.get("answered_by"):
        typer.echo(f"answered by: {out['answered_by']}")
    note = retrieval_note(out, index_dir)
    if note:
        typer.echo(note)
