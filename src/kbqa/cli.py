"""The ``kbqa`` command line: ``index`` a knowledge base, ``ask`` a question, ``eval`` questions."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from kbqa.errors import KBQAError, ModelError
from kbqa.finetune.cli import finetune_app
from kbqa.llm.grounding import DEFAULT_GROUNDING
from kbqa.llm.models import DEFAULT_MODEL, MODELS
from kbqa.text import is_blank

if TYPE_CHECKING:
    from collections.abc import Iterator

    from kbqa.context import Context
    from kbqa.corpus.loaders import Document

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
    # trafilatura logs an ERROR for every page it finds no main text in (the crawl report
    # already counts them); show its lines only with -v
    logging.getLogger("trafilatura").setLevel(logging.WARNING if verbose else logging.CRITICAL)


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


@app.command()
def index(
    kb: Annotated[
        Path | None,
        typer.Argument(
            help="Knowledge base: a .jsonl file, a MediaWiki .xml/.xml.bz2 dump, a folder of "
            ".txt/.md/.html files, or one such file. Not with --continue.",
            show_default=False,
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Index directory to create or replace.")
    ] = Path("index"),
    embedder: Annotated[
        str,
        typer.Option(
            help="Dense part. none: BM25 over words and character 4-grams alone (under a "
            "minute for 25,000 chunks; recalls as well as BM25 + e5 on BanglaRQA and XQuAD). "
            "e5: multilingual-e5-small on every chunk (about 3 chunks/s on 2 cores: hours for a "
            "large knowledge base; use --dense later). static: a word table distilled from e5 "
            "(minutes; measured no better than none)."
        ),
    ] = "none",
    dense: Annotated[
        str,
        typer.Option(
            help="With --embedder e5 or static. now: embed before the index is written. later: "
            "write the BM25 index at once (ask works, BM25 alone) and add the dense part with "
            "--continue."
        ),
    ] = "now",
    continue_: Annotated[
        bool,
        typer.Option(
            "--continue",
            help="Add the dense part to the --out index built with --dense later (resumable).",
        ),
    ] = False,
    strategy: Annotated[
        str,
        typer.Option(
            help="coverage (light cleaning, 800-char chunks), precision (every recurring "
            "block removed, 1000-char chunks) or both (one directory holding the two, each "
            "distinct chunk text embedded once; coverage is the one opened by default)."
        ),
    ] = "coverage",
    chunk_size: Annotated[
        int | None, typer.Option(help="Chunk length in characters (default: the strategy's).")
    ] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option(help="Chunk overlap in characters (default: the strategy's).")
    ] = None,
    skip_bad_lines: Annotated[
        bool,
        typer.Option(
            help="Skip malformed JSONL lines, and folder files that are unreadable or not text."
        ),
    ] = False,
    reuse: Annotated[
        bool,
        typer.Option(
            help="Reuse the vectors of chunk texts the index being replaced already holds."
        ),
    ] = True,
) -> None:
    """Clean and chunk a knowledge base and build its index: BM25 over words and character
    4-grams, and a dense part with --embedder e5 or static.

    Ctrl-C keeps what was embedded: the same command resumes. --dense later returns with BM25
    ready; `kbqa index --continue --out DIR` adds the dense vectors (also resumable).
    """
    from tqdm.contrib.logging import logging_redirect_tqdm

    from kbqa.corpus.boilerplate import BoilerplateModel
    from kbqa.corpus.loaders import load_documents
    from kbqa.corpus.strategies import STRATEGIES, clean_documents, get_strategy
    from kbqa.retrieval.embed_cache import BuildInterrupted
    from kbqa.retrieval.embedders import load_embedder
    from kbqa.retrieval.index import RECURRING_BLOCKS, StrategyInput, build_indexes

    if continue_:
        if kb is not None:
            _fail("--continue adds the dense part to the --out index; give no knowledge base")
        if (embedder, dense, strategy) != ("none", "now", "coverage"):
            _fail(
                "--continue takes only --out: the embedder and strategies are the index's own "
                "(from its manifest)"
            )
        _continue_index(out)
        return
    if kb is None:
        _fail("give a knowledge base to index (or --continue --out DIR)")
    if dense not in ("now", "later"):
        _fail(f"--dense must be now or later, got {dense!r}")
    if dense == "later" and embedder in ("none", ""):
        _fail("--dense later needs a dense embedder: --embedder e5 (or static)")
    _interrupt_on_sigterm()
    try:
        strats = list(STRATEGIES.values()) if strategy == "both" else [get_strategy(strategy)]
    except ValueError as exc:
        _fail(f"{exc} or both")
    if len(strats) > 1 and (chunk_size is not None or chunk_overlap is not None):
        _fail("--chunk-size/--chunk-overlap set one strategy's chunking; not with --strategy both")
    sizes = {
        s.name: (
            s.chunk_size if chunk_size is None else chunk_size,
            s.chunk_overlap if chunk_overlap is None else chunk_overlap,
        )
        for s in strats
    }
    try:
        for size, overlap in sizes.values():
            if size <= 0 or not 0 <= overlap < size:
                _fail(
                    f"need chunk_size > 0 and 0 <= chunk_overlap < chunk_size, got {size}/{overlap}"
                )
        t0 = time.perf_counter()
        emb = load_embedder(embedder)
        skipped: list[str] = []
        passes = 0

        def read() -> Iterator[Document]:
            """The knowledge base; skipped lines are reported on the first pass only."""
            nonlocal passes
            passes += 1
            if passes > 1:
                return load_documents(kb, skip_bad_lines=skip_bad_lines, warn=False)
            return load_documents(kb, skip_bad_lines=skip_bad_lines, skipped=skipped)

        boilerplate = BoilerplateModel.fit(read())
        blocks_file = json.dumps(
            [
                {"site": site, "block": block, "pages": n, "site_pages": total}
                for site, block, n, total in boilerplate.report(None)
            ],
            ensure_ascii=False,
            indent=1,
        )
        parts = {
            s.name: StrategyInput(
                clean_documents(read, s, boilerplate)[0],
                *sizes[s.name],
                extra_files={RECURRING_BLOCKS: blocks_file},
            )
            for s in strats
        }
        with logging_redirect_tqdm():
            report = build_indexes(
                parts,
                out,
                emb,
                source=kb,
                reuse=reuse,
                multi=len(strats) > 1,
                dense=dense,  # type: ignore[arg-type]
            )
    except BuildInterrupted as exc:
        _interrupted(exc)
    except KeyboardInterrupt:
        typer.secho(
            f"interrupted before any embedding: nothing was written ({out} is as it was)",
            fg=typer.colors.YELLOW,
            err=True,
        )
        raise typer.Exit(code=130) from None
    except KBQAError as exc:
        _fail(str(exc))
    later = dense == "later" and emb.dim > 0
    typer.echo(f"index written to {out}" + ("  (BM25 only so far)" if later else ""))
    typer.echo(f"documents      {report.documents // len(strats)}")
    if skipped:
        typer.echo(f"skipped        {len(skipped)} (first: {skipped[0]})")
    rows = boilerplate.report(TOP_BLOCKS)
    n_blocks = sum(len(b) for b in boilerplate.blocks.values())
    typer.echo(f"recurring      {n_blocks} blocks learned" + (", most widespread:" if rows else ""))
    for site, block, n, total in rows:
        typer.echo(f"  {n}/{total} pages{' of ' + site if site else ''}: {block[:80]!r}")
    if n_blocks > len(rows):
        typer.echo(f"  ... all {n_blocks} in {RECURRING_BLOCKS} in the index directory")
    for name, counts in report.per_strategy.items():
        size, overlap = sizes[name]
        where = f" in {out / name}" if len(strats) > 1 else ""
        typer.echo(
            f"strategy       {name} ({size}/{overlap} characters): {counts['chunks']} chunks{where}"
        )
        if counts["empty_documents"]:
            typer.echo(
                f"  {counts['empty_documents']} documents left no text after {name} cleaning "
                "(made only of recurring blocks) and are not indexed"
            )
    if later:
        typer.echo(
            f"dense          not built yet: questions use BM25 alone until `kbqa index --continue "
            f"--out {out}` adds the {emb.id} vectors (resumable)"
        )
    _print_embedding(report)
    for stage, sec in report.stage_seconds.items():
        part = "  (part of dense)" if stage == "distil" else ""
        typer.echo(f"time {stage:<10}{sec:8.1f} s{part}")
    typer.echo(f"time {'total':<10}{time.perf_counter() - t0:8.1f} s")
    typer.echo(f"{'peak RSS':<15}{report.peak_rss_mib:8.0f} MiB")


def _print_embedding(report: Any) -> None:
    if report.table_words:
        resumed = f" ({report.resumed_words} resumed)" if report.resumed_words else ""
        typer.echo(f"static table   {report.table_words} words distilled from e5{resumed}")
    if not report.distinct_texts:
        return
    fresh = report.embedded_chunks - report.resumed_chunks
    typer.echo(
        f"embedded       {fresh} distinct chunk texts in this run, of {report.distinct_texts} "
        f"({report.chunks} chunks)"
    )
    if report.reused_chunks:
        typer.echo(f"reused         {report.reused_chunks} vectors from the index replaced")
    if report.resumed_chunks:
        typer.echo(
            f"resumed        {report.resumed_chunks} vectors embedded by an interrupted build"
        )


def _interrupt_on_sigterm() -> None:
    """Treat SIGTERM and SIGHUP (a closed terminal) like Ctrl-C, so a stopped build says how
    far it got (SIGKILL cannot be caught; the cache still lets the same command resume)."""

    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)


def _interrupted(exc: Any) -> NoReturn:
    typer.secho(
        f"interrupted: {exc.done} of {exc.total} {exc.what} embedded; run the same command "
        "to resume",
        fg=typer.colors.YELLOW,
        err=True,
    )
    raise typer.Exit(code=130)


def _continue_index(out: Path) -> None:
    from tqdm.contrib.logging import logging_redirect_tqdm

    from kbqa.retrieval.embed_cache import BuildInterrupted
    from kbqa.retrieval.index import continue_index

    _interrupt_on_sigterm()
    t0 = time.perf_counter()
    try:
        with logging_redirect_tqdm():
            report = continue_index(out)
    except BuildInterrupted as exc:
        _interrupted(exc)
    except KBQAError as exc:
        _fail(str(exc))
    if not report.chunks:
        typer.echo(f"{out}: the dense part is already built; nothing to do")
        return
    typer.echo(f"dense part added to {out}: questions now fuse BM25 and dense retrieval")
    _print_embedding(report)
    typer.echo(f"time {'total':<10}{time.perf_counter() - t0:8.1f} s")
    typer.echo(f"{'peak RSS':<15}{report.peak_rss_mib:8.0f} MiB")


TOP_BLOCKS = 10
"""Recurring blocks `kbqa index` prints; all of them go to the index directory."""


@app.command("crawl")
def crawl_(
    start_url: Annotated[str, typer.Argument(help="First page; the crawl stays on its host.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Corpus to write (.jsonl); re-running resumes.")
    ],
    max_pages: Annotated[int, typer.Option(help="Pages to save.")] = 100,
    max_depth: Annotated[int, typer.Option(help="Link hops from the start page.")] = 5,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(help="Another host that may be crawled (repeatable), e.g. a subdomain."),
    ] = None,
    delay: Annotated[float, typer.Option(help="Seconds between requests to one host.")] = 0.5,
    concurrency: Annotated[int, typer.Option(help="Requests in flight.")] = 2,
    timeout: Annotated[float, typer.Option(help="Seconds to connect / per read.")] = 10.0,
    max_bytes: Annotated[int, typer.Option(help="Skip pages larger than this.")] = 5_000_000,
    keep_html: Annotated[bool, typer.Option(help="Store each page's raw HTML too.")] = False,
    extract: Annotated[
        str,
        typer.Option(
            help="full: every visible text block, navigation included, for `kbqa index` "
            "--strategy to clean; main: trafilatura's main content only."
        ),
    ] = "full",
    ignore_robots: Annotated[bool, typer.Option(help="Do not honour robots.txt.")] = False,
) -> None:
    """Crawl a website breadth-first into a JSON Lines corpus that `kbqa index` reads."""
    from kbqa.corpus.crawl import CrawlConfig, crawl

    try:
        cfg = CrawlConfig(
            max_pages=max_pages,
            max_depth=max_depth,
            allowed_hosts=tuple(allow_host or ()),
            delay=delay,
            concurrency=concurrency,
            timeout=timeout,
            max_bytes=max_bytes,
            keep_html=keep_html,
            extract=extract,
            respect_robots=not ignore_robots,
        )
        report = crawl(start_url, out, cfg)
    except (KBQAError, ValueError, OSError) as exc:
        _fail(str(exc))
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, or SIGTERM (see main)
        typer.echo(
            f"interrupted: the pages saved so far are in {out}; run the same command again to "
            "resume",
            err=True,
        )
        os._exit(130)  # do not wait for requests still in flight
    rate = report.pages / report.seconds if report.seconds else 0.0
    typer.echo(f"corpus written to {out}")
    if report.resumed_pages:
        typer.echo(f"resumed        {report.resumed_pages} pages saved by earlier runs")
    typer.echo(f"pages          {report.pages} ({rate:.1f} pages/s, {report.seconds:.1f} s)")
    typer.echo(f"bytes          {report.bytes}")
    typer.echo(f"left in queue  {report.frontier_left}")
    for reason, count in report.skipped.most_common():
        typer.echo(f"skipped        {count:>5}  {reason}  (e.g. {report.examples[reason]})")


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
MODEL_NAMES = ", ".join(MODELS)
ModelOpt = Annotated[
    str,
    typer.Option(
        "--model",
        "-m",
        envvar="KBQA_MODEL",
        help=f"{MODEL_NAMES} or a .gguf path.",
    ),
]
KOpt = Annotated[int, typer.Option("--k", "-k", help="Chunks retrieved on the first pass.")]
NCtxOpt = Annotated[
    int, typer.Option("--n-ctx", help="LLM context window in tokens (prompt budget).")
]
EmbedderOpt = Annotated[
    str,
    typer.Option(
        help="Query embedder (none, static, e5); must be the one the index was built with. "
        "Default: the index's own."
    ),
]
LlmOpt = Annotated[
    bool, typer.Option("--llm/--no-llm", help="--no-llm: answer with the pattern extractor.")
]
VerifyOpt = Annotated[
    bool,
    typer.Option(
        help="Run the verifier on each answer (off by default: it lowered F1 with the tuned "
        "reader, docs/finetune.md)."
    ),
]
VerifierOpt = Annotated[
    str,
    typer.Option(help="Verifier model (default: qwen2.5-coder-1.5b if installed, else --model)."),
]
FallbackOpt = Annotated[
    bool, typer.Option(help="On abstention, ask the precision index (--strategy both).")
]
WebOpt = Annotated[
    str,
    typer.Option(
        envvar="KBQA_WEB_SEARCH",
        help="Web search when still unanswered: ddgs, off, or static:RESULTS.json.",
    ),
]
WebTimeoutOpt = Annotated[
    float, typer.Option(help="Time limit of one web search, seconds (at most 60).")
]
RetriesOpt = Annotated[int, typer.Option(help="Retries with k=10 after an abstention (0-3).")]
AdapterOpt = Annotated[
    str,
    typer.Option(
        help="LoRA adapter for --model: a `kbqa finetune reader` output's adapter directory "
        "(default: the model's own; gemma3-270m-reader ships one)."
    ),
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        help="At the first answer token, abstain when the reader's probability of starting the "
        "abstention phrase is at least this, else mask that start (0: plain greedy decoding; "
        "default: the reader's own, from its adapter manifest, else 0).",
        min=0.0,
        max=1.0,
    ),
]
CrossCheckOpt = Annotated[
    str,
    typer.Option(
        help="Check the reader against the pattern extractor (the extractor's span when they "
        "share no word; abstain or answer by how much of the question the context's best "
        "sentence holds): auto (Bangla only), on or off."
    ),
]
GroundingOpt = Annotated[
    str,
    typer.Option(
        help="Keep answers inside the context: off, snap (closest context span) or constrained "
        "(decoding masked to context spans)."
    ),
]


def _stages(
    llm: bool,
    verify: bool,
    verifier_model: str,
    fallback: bool,
    web_search: str,
    web_timeout: float,
    max_retries: int = 1,
    reader_adapter: str = "",
    grounding: str = DEFAULT_GROUNDING,
    abstention_threshold: float | None = None,
    cross_check: str = "auto",
) -> dict[str, object]:
    return {
        "reader_adapter": reader_adapter,
        "cross_check": cross_check,
        "grounding": grounding,
        "abstention_threshold": abstention_threshold,
        "max_retries": max_retries,
        "use_llm": llm,
        "verify": verify,
        "verifier_model": verifier_model,
        "fallback": fallback,
        "web_search": web_search,
        "web_timeout": web_timeout,
    }


@app.command()
def ask(
    question: Annotated[
        str, typer.Argument(help="The question, in Bangla, English or another language.")
    ],
    index_dir: IndexOpt = Path("index"),
    model: ModelOpt = DEFAULT_MODEL,
    k: KOpt = 3,
    embedder: EmbedderOpt = "",
    n_ctx: NCtxOpt = 4096,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole graph output as JSON.")
    ] = False,
    llm: LlmOpt = True,
    verify: VerifyOpt = False,
    verifier_model: VerifierOpt = "",
    fallback: FallbackOpt = True,
    web_search: WebOpt = "ddgs",
    web_timeout: WebTimeoutOpt = 5.0,
    max_retries: RetriesOpt = 1,
    reader_adapter: AdapterOpt = "",
    grounding: GroundingOpt = DEFAULT_GROUNDING,
    abstention_threshold: ThresholdOpt = None,
    cross_check: CrossCheckOpt = "auto",
) -> None:
    """Answer one question from an index, with sources and the route taken."""
    from kbqa.evals.tracing import flush_traces
    from kbqa.graph import graph
    from kbqa.resources import chat_model_for, retriever_for, verifier_for

    if is_blank(question):
        _fail("question is empty: ask a non-empty question")
    stages = _stages(
        llm, verify, verifier_model, fallback, web_search, web_timeout, max_retries,
        reader_adapter, grounding, abstention_threshold, cross_check,
    )  # fmt: skip
    ctx = _context(index_dir, model, k, embedder, n_ctx=n_ctx, **stages)
    try:
        t0 = time.perf_counter()
        retriever_for(ctx)
        if ctx.use_llm:
            from kbqa.llm.models import check_model_name

            # a misspelt name or a bad adapter is an error, not a fallback
            check_model_name(ctx.model, ctx.reader_adapter)
            if ctx.verifier_model:
                check_model_name(ctx.verifier_model)
            try:
                chat_model_for(ctx)
            except ModelError as exc:
                typer.echo(
                    f"warning: LLM unavailable ({exc}); answering with the pattern extractor",
                    err=True,
                )
            else:
                if ctx.verify:
                    verifier_for(ctx)  # a verifier that cannot load is an error, said once
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = graph.invoke({"question": question}, context=ctx)
        total_s = time.perf_counter() - t0
    except (KBQAError, ValueError) as exc:
        _fail(str(exc))
    finally:
        flush_traces()
    if as_json:
        typer.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    timings = out.get("timings", [])
    retr = sum(t["seconds"] for t in timings if t["node"] in ("retrieve", "retry"))
    llm_nodes = ("generate", "verify", "fallback", "web_search")
    llm_s = sum(t["seconds"] for t in timings if t["node"] in llm_nodes)
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
    if out.get("retrieval_mode") == "bm25 (dense pending)":
        typer.echo(
            f"retrieval: BM25 only; the dense part of {index_dir} is not built yet (run "
            f"`kbqa index --continue --out {index_dir}` to add it)"
        )
    typer.echo(
        f"time: retrieval {retr:.2f} s, llm {llm_s:.2f} s, total {total_s:.2f} s "
        f"(+ {load_s:.1f} s loading index and model)"
    )


class _DefaultRunGroup(TyperGroup):
    """``kbqa eval QUESTIONS ...`` means ``kbqa eval run QUESTIONS ...``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_DefaultRunGroup,
    no_args_is_help=True,
    help="Evaluate: `kbqa eval QUESTIONS` (= `eval run`), `eval generate`, `eval report`.",
)
app.add_typer(eval_app, name="eval")
app.add_typer(finetune_app, name="finetune")


def _default_run_dir(
    questions: Path, model: str, ablate: bool, models: str | None, index_dir: Path
) -> Path:
    from kbqa.evals.ablation import model_tag
    from kbqa.evals.runner import index_identity

    data_tag = f"{questions.resolve().parent.name}-{questions.stem}"
    what = "ablate" if ablate else "models" if models else model_tag(model)
    strategy = (index_identity(index_dir) or {}).get("strategy")
    suffix = f"-{strategy}" if strategy and strategy != "coverage" else ""
    return Path("runs") / f"eval-{data_tag}-{what}{suffix}"


@eval_app.command("run")
def eval_run(
    questions: Annotated[
        Path, typer.Argument(help="Question file: .jsonl (shared/data format) or .csv.")
    ],
    index_dir: IndexOpt = Path("index"),
    model: ModelOpt = DEFAULT_MODEL,
    k: KOpt = 3,
    embedder: EmbedderOpt = "",
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
            help="Run directory (records.jsonl, summary.json, report.md, plots/). Re-running "
            "into it resumes. Default: runs/eval-<data folder>-<file>-<model>[-precision].",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Discard an earlier run in --out instead of resuming it.")
    ] = False,
    ablate: Annotated[
        bool, typer.Option(help="Also re-run the sample with stages switched off; one table.")
    ] = False,
    models: Annotated[
        str | None,
        typer.Option(help="Comma-separated models to compare (each in its own process)."),
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(help="Questions in flight (1 suits one local model).")
    ] = 1,
    dataset_name: Annotated[
        str | None,
        typer.Option(help="LangSmith dataset to create/extend when LANGSMITH_API_KEY is set."),
    ] = None,
    report: Annotated[bool, typer.Option(help="Write report.md and plots.")] = True,
    llm: LlmOpt = True,
    verify: VerifyOpt = False,
    verifier_model: VerifierOpt = "",
    fallback: FallbackOpt = True,
    web_search: WebOpt = "ddgs",
    web_timeout: WebTimeoutOpt = 5.0,
    max_retries: RetriesOpt = 1,
    reader_adapter: AdapterOpt = "",
    grounding: GroundingOpt = DEFAULT_GROUNDING,
    abstention_threshold: ThresholdOpt = None,
    cross_check: CrossCheckOpt = "auto",
) -> None:
    """Score the graph on a question file: EM, F1, containment, abstention, recall@k,
    answer-in-context, trajectory, stage attribution; resumable; report with plots."""
    from kbqa.evals.datasets import load_questions, select
    from kbqa.evals.report import write_report
    from kbqa.evals.runner import evaluate_questions, run_config
    from kbqa.evals.tracing import flush_traces
    from kbqa.retrieval.index import source_sha256

    for name, value in (("limit", limit), ("sample", sample)):
        if value is not None and value <= 0:
            _fail(f"--{name} must be > 0, got {value}")
    if max_concurrency < 1:
        _fail(f"--max-concurrency must be >= 1, got {max_concurrency}")
    if ablate and models:
        _fail("use --ablate or --models, not both")
    stages = _stages(
        llm, verify, verifier_model, fallback, web_search, web_timeout, max_retries,
        reader_adapter, grounding, abstention_threshold, cross_check,
    )  # fmt: skip
    ctx = _context(index_dir, model, k, embedder, n_ctx=n_ctx, **stages)
    run_dir = out or _default_run_dir(questions, model, ablate, models, index_dir)
    if llm and not models:
        from kbqa.llm.models import check_model_name

        try:  # a misspelt model or a bad adapter stops the run before any question
            check_model_name(ctx.model, ctx.reader_adapter)
        except ModelError as exc:
            _fail(str(exc))
    try:
        all_qs = load_questions(questions)
        if sample is not None and sample > len(all_qs):
            typer.echo(
                f"note: --sample {sample} but {questions} has {len(all_qs)} questions; "
                "evaluating all of them",
                err=True,
            )
        qs = select(all_qs, limit=limit, sample=sample, seed=seed)
        config = run_config(
            questions, source_sha256(questions), ctx, sample=sample, limit=limit, seed=seed
        )
        if models:
            from kbqa.evals.ablation import run_models
            from kbqa.llm.models import check_model_name

            names = list(dict.fromkeys(m.strip() for m in models.split(",") if m.strip()))
            if not names:
                _fail("--models lists no model")
            for name in names:
                check_model_name(name)
            if Path(run_dir).exists() and not Path(run_dir).is_dir():
                _fail(f"cannot write the run to {run_dir}: it is a file")
            shared = [
                str(questions),
                "--index",
                str(index_dir),
                "--k",
                str(k),
                "--embedder",
                embedder,
                "--n-ctx",
                str(n_ctx),
                "--seed",
                str(seed),
            ]
            shared += ["--sample", str(sample)] if sample else []
            shared += ["--limit", str(limit)] if limit else []
            shared += ["--overwrite"] if overwrite else []
            shared += [
                "--llm" if llm else "--no-llm",
                "--verify" if verify else "--no-verify",
                "--verifier-model",
                verifier_model,
                "--fallback" if fallback else "--no-fallback",
                "--web-search",
                web_search,
                "--web-timeout",
                str(web_timeout),
                "--max-retries",
                str(max_retries),
                "--grounding",
                grounding,
                "--cross-check",
                cross_check,
            ]
            if abstention_threshold is not None:
                shared += ["--abstention-threshold", str(abstention_threshold)]
            if reader_adapter:
                _fail("--reader-adapter applies to one model; not with --models")
            Path(run_dir).mkdir(parents=True, exist_ok=True)
            rows = run_models(names, shared, run_dir)
            from kbqa.evals.report import markdown_table

            cols = [
                "name",
                "token_f1",
                "exact_match",
                "recall@3",
                "seconds_per_question_median",
                "peak_rss_mib",
            ]
            typer.echo(markdown_table(cols, [[r.get(c) for c in cols] for r in rows]))
            if report:
                path = write_report(
                    run_dir, [], {"model": ", ".join(names), "index_dir": str(index_dir)}
                )
                typer.echo(f"report: {path}")
            return
        from kbqa.evals.ablation import ABLATION_KEYS, llm_cache, run_ablations
        from kbqa.evals.report import markdown_table

        with llm_cache() if ablate else contextlib.nullcontext():
            run = evaluate_questions(
                qs,
                ctx,
                run_dir,
                config=config,
                overwrite=overwrite,
                max_concurrency=max_concurrency,
                dataset_name=dataset_name,
            )
            if ablate:
                rows = run_ablations(
                    qs, ctx, run_dir, config=config, full_summary=run.summary, overwrite=overwrite
                )
                cols = ["name", *ABLATION_KEYS]
                typer.echo(markdown_table(cols, [[r.get(c) for c in cols] for r in rows]))
        if report:
            path = write_report(run_dir, run.records, run.summary)
            typer.echo(f"report: {path}")
    except (KBQAError, ValueError, OSError) as exc:
        _fail(str(exc))
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM (see main)
        records = Path(run_dir) / "records.jsonl"
        if records.is_file():
            with records.open("rb") as fh:
                saved = sum(1 for _ in fh)
            typer.echo(
                f"\ninterrupted: {saved} of {len(qs)} questions saved in {run_dir}; "
                "run the same command again to resume",
                err=True,
            )
        flush_traces()
        sys.stdout.flush()
        sys.stderr.flush()
        # Exit now: langsmith.evaluate's worker thread would otherwise go on through the
        # remaining questions (unrecorded) before the interpreter could exit. Every record is
        # already flushed and the partial summary written.
        os._exit(exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 130)
    finally:
        flush_traces()
    typer.echo(format_summary(run.summary))
    typer.echo(f"run directory: {run_dir}")
    if run.records and run.summary.get("errors") == len(run.records):
        first = next(r["error"] for r in run.records if "error" in r)
        _fail(f"every question failed; the first error: {first}")


def format_summary(summary: dict[str, Any]) -> str:
    """Headline figures as an aligned two-column table."""
    from kbqa.evals.report import summary_rows

    rows = summary_rows(summary)
    h = summary.get("harness")
    if isinstance(h, dict):
        ratio = h.get("overhead_ratio")
        rows += [
            ["graph wall s (sum)", f"{h['graph_seconds']:.1f}"],
            ["eval wall s", f"{h['wall_seconds']:.1f}"],
            ["harness overhead", "n/a" if ratio is None else f"{ratio * 100:+.1f}% of graph time"],
        ]
    width = max(len(str(r[0])) for r in rows)

    def show(value: object) -> str:
        if value is None:
            return "n/a"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    return "\n".join(f"{r[0]!s:<{width}}  {show(r[1])}" for r in rows)


@eval_app.command("report")
def eval_report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory written by `kbqa eval`.")],
    plots: Annotated[bool, typer.Option(help="Draw PNG plots.")] = True,
) -> None:
    """Recompute summary.json from the records (unless the run is partial) and rewrite
    report.md and plots/ for a run directory (or a --models parent directory)."""
    from kbqa.evals.report import write_report
    from kbqa.evals.runner import load_run, write_json

    try:
        if not (run_dir / "records.jsonl").exists() and (run_dir / "models.json").is_file():
            path = write_report(run_dir, [], {}, plots=plots)  # a --models parent directory
        else:
            run = load_run(run_dir)
            if not run.summary.get("partial"):
                write_json(run_dir / "summary.json", run.summary)
            path = write_report(run_dir, run.records, run.summary, plots=plots)
    except (KBQAError, OSError, ValueError) as exc:
        _fail(str(exc))
    typer.echo(f"report: {path}")


@eval_app.command("generate")
def eval_generate(
    index_dir: IndexOpt = Path("index"),
    n: Annotated[int, typer.Option("--n", help="QA pairs to draft.")] = 200,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Question file to write (.jsonl).")
    ] = Path("generated.qa.jsonl"),
    model: ModelOpt = DEFAULT_MODEL,
    embedder: EmbedderOpt = "",
    n_ctx: NCtxOpt = 4096,
    seed: Annotated[int, typer.Option(help="Chunk sampling seed.")] = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out file.")] = False,
) -> None:
    """Draft QA pairs from sampled chunks of an index, flagged needs_review, for a dev set of
    your own knowledge base. The LLM is asked to reply `Question: ...` / `Answer: ...`; a pair is
    kept when the answer is a verbatim span of the chunk (at most 8 words), not in the title and
    not in the question; one per document; at most 3n chunks are tried."""
    from kbqa.evals.question_generation import generate_questions

    if n <= 0:
        _fail(f"--n must be > 0, got {n}")
    if out.is_dir():
        _fail(f"cannot write questions to {out}: it is a directory")
    if out.exists() and not overwrite:
        _fail(f"{out} exists; pass --overwrite to replace it")
    if out.parent.exists() and not out.parent.is_dir():
        _fail(f"cannot write questions to {out}: {out.parent} is a file")
    ctx = _context(index_dir, model, 3, embedder, n_ctx=n_ctx)
    try:
        stats = generate_questions(ctx, n, out, seed=seed)
    except (KBQAError, ValueError, OSError) as exc:
        _fail(str(exc))
    typer.echo(f"kept {stats['kept']} of {stats['tried']} drafted pairs in {stats['seconds']} s")
    for reason, count in sorted(stats["rejected"].items(), key=lambda kv: -kv[1]):
        typer.echo(f"  rejected ({reason}): {count}")
    if not stats["kept"]:
        _fail(f"no drafted pair passed the checks; nothing written to {out}")
    typer.echo(f"questions written to {out} (needs_review: true; check them before use)")


def _below_warning_from_bm25s(record: logging.LogRecord) -> bool:
    """A handler filter: bm25s sets its own logger to DEBUG when it is imported (after this
    process set it to WARNING) and logs each build step."""
    return not (record.name.startswith("bm25s") and record.levelno < logging.WARNING)


def main() -> None:
    """Console-script entry point."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(_below_warning_from_bm25s)
    # SIGTERM unwinds like Ctrl-C, so half-written temporary files are removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    app()


if __name__ == "__main__":
    main()
