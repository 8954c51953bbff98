"""``kbqa index``: clean and chunk a knowledge base and build its index (BM25 over words and
character 4-grams, and a dense part with ``--embedder e5`` or ``static``)."""

from __future__ import annotations

import json
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn

import typer

from kbqa.cli.app import app, fail
from kbqa.cli.index_report import (
    print_blocks,
    print_embedding,
    print_strategies,
    print_times,
)
from kbqa.cli.store import check_store, write_to_store
from kbqa.errors import KBQAError
from kbqa.text import lone_surrogate

if TYPE_CHECKING:
    from kbqa.corpus.boilerplate import BoilerplateModel
    from kbqa.corpus.document import Document
    from kbqa.corpus.strategies import Strategy

KnowledgeBase = Annotated[
    Path | None,
    typer.Argument(
        help="Knowledge base: a .jsonl file, a MediaWiki .xml/.xml.bz2 dump, a folder of "
        ".txt/.md/.html files (and .pdf/.docx with kbqa\\[docs]), or one such file. Not with "
        "--continue.",
        show_default=False,
    ),
]
Embedder = Annotated[
    str,
    typer.Option(
        help="Dense part. none: BM25 over words and character 4-grams alone (under a "
        "minute for 25,000 chunks; recalls as well as BM25 + e5 on BanglaRQA and XQuAD). "
        "e5: multilingual-e5-small on every chunk (about 3 chunks/s on 2 cores: hours for a "
        "large knowledge base; use --dense later). static: a word table distilled from e5 "
        "(minutes; measured no better than none). hf:PATH_OR_NAME: a sentence-transformers "
        "model from a folder or the Hugging Face cache (hf:minilm: all-MiniLM-L6-v2, "
        "English; the hf extra). bge-m3[:FOLDER]: the seed's BGE-M3 through FlagEmbedding "
        "(the bge extra; from the Hugging Face cache, never downloaded)."
    ),
]
Dense = Annotated[
    str,
    typer.Option(
        help="With a dense --embedder (e5, static, hf:...). now: embed before the index is "
        "written. later: write the BM25 index at once (ask works, BM25 alone) and add the dense "
        "part with --continue."
    ),
]
Continue = Annotated[
    bool,
    typer.Option(
        "--continue",
        help="Add the dense part to the --out index built with --dense later (resumable).",
    ),
]
StrategyName = Annotated[
    str,
    typer.Option(
        help="coverage (light cleaning, 800-char chunks), precision (every recurring "
        "block removed, 1000-char chunks) or both (one directory holding the two, each "
        "distinct chunk text embedded once; coverage is the one opened by default)."
    ),
]
SkipBadLines = Annotated[
    bool,
    typer.Option(
        "--skip-bad-lines",  # a flag: no --no- form to widen the help's option column
        help="Skip malformed JSONL lines, and folder files that are unreadable or not text.",
    ),
]
AllowHardLinks = Annotated[
    bool,
    typer.Option(
        "--allow-hard-links",
        help="Read a folder's files that have other names on the disk too (hard links; "
        "they may be files from outside the folder).",
    ),
]
Reuse = Annotated[
    bool,
    typer.Option(help="Reuse the vectors of chunk texts the index being replaced already holds."),
]
Store = Annotated[
    str | None,
    typer.Option(
        help="Also write the index into Milvus (replacing what that name held): "
        "milvus://PATH.db (Milvus Lite) or milvus://http://HOST:PORT, optionally "
        "#COLLECTION; then `kbqa ask --index` the same URI. Without a knowledge base: "
        "write the --out index already built. Needs kbqa\\[milvus].",  # \\[: rich markup
        show_default=False,
    ),
]


@app.command()
def index(
    kb: KnowledgeBase = None,
    out_given: Annotated[
        str, typer.Option("--out", "-o", help="Index directory to create or replace.")
    ] = "index",
    embedder: Embedder = "none",
    dense: Dense = "now",
    continue_: Continue = False,
    strategy: StrategyName = "coverage",
    chunk_size: Annotated[
        int | None, typer.Option(help="Chunk length in characters (default: the strategy's).")
    ] = None,
    chunk_overlap: Annotated[
        int | None, typer.Option(help="Chunk overlap in characters (default: the strategy's).")
    ] = None,
    skip_bad_lines: SkipBadLines = False,
    allow_hard_links: AllowHardLinks = False,
    reuse: Reuse = True,
    store: Store = None,
) -> None:
    """Clean and chunk a knowledge base and build its index: BM25 over words and character
    4-grams, and a dense part with --embedder e5 or static.

    Ctrl-C keeps what was embedded: the same command resumes. --dense later returns with BM25 ready; `kbqa index --continue --out DIR` adds the dense vectors (also resumable).
    """  # noqa: E501 (one line: the help wraps a paragraph's line breaks as they are)
    from kbqa.corpus.strategies import STRATEGIES, get_strategy

    _check_out(out_given)  # as typed: a Path would fold a URI's "//"
    out = Path(out_given)
    if continue_:
        others = {
            "a knowledge base": kb is not None,
            "--embedder": embedder != "none",
            "--dense": dense != "now",
            "--strategy": strategy != "coverage",
            "--chunk-size": chunk_size is not None,
            "--chunk-overlap": chunk_overlap is not None,
            "--skip-bad-lines": skip_bad_lines,
            "--allow-hard-links": allow_hard_links,
            "--no-reuse": not reuse,
            "--store": store is not None,
        }
        _check_continue([name for name, given in others.items() if given])
        return _continue_index(out)
    if store is not None:
        check_store(store, later=dense == "later")
        if kb is None:
            return write_to_store(out, store)
    if kb is None:
        fail("give a knowledge base to index (or --continue --out DIR)")
    for given in (str(kb), out_given):  # the manifest records both as text
        if lone_surrogate(given):
            fail(f"{given!a} is not a valid file name here (not UTF-8); rename it")
    if dense not in ("now", "later"):
        fail(f"--dense must be now or later, got {dense!r}")
    if dense == "later" and embedder in ("none", ""):
        fail("--dense later needs a dense embedder: --embedder e5 (or static)")
    _interrupt_on_sigterm()
    try:
        strats = list(STRATEGIES.values()) if strategy == "both" else [get_strategy(strategy)]
    except ValueError as exc:
        fail(f"{exc} or both")
    sizes = _chunk_sizes(strats, chunk_size, chunk_overlap)
    t0 = time.perf_counter()
    report, boilerplate, skipped, emb = _build(
        kb,
        out,
        embedder,
        dense,
        strats,
        sizes,
        skip_bad_lines=skip_bad_lines,
        reuse=reuse,
        allow_hard_links=allow_hard_links,
    )
    later = dense == "later" and emb.dim > 0
    typer.echo(f"index written to {out}" + ("  (BM25 only so far)" if later else ""))
    typer.echo(f"documents      {report.documents // len(strats)}")
    if skipped:
        typer.echo(f"skipped        {len(skipped)} (first: {skipped[0]})")
    print_blocks(boilerplate)
    print_strategies(report, sizes, out, several=len(strats) > 1)
    if later:
        typer.echo(
            f"dense          not built yet: questions use BM25 alone until `kbqa index --continue "
            f"--out {out}` adds the {emb.id} vectors (resumable)"
        )
    print_embedding(report)
    print_times(report, time.perf_counter() - t0, loaded_embedder=embedder != "none")
    if store is not None:
        write_to_store(out, store)


def _check_out(out: str) -> None:
    """Stop when ``--out`` is a URI (``milvus://...``): it names the local index folder."""
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", out):  # a folder named "milvus:" is a folder
        example = out if out.lower().startswith("milvus://") else "milvus://kb.db"
        fail(
            f"--out {out} is a URI: --out is the local index folder; to write the index into "
            f"Milvus too, add --store (for example --out index/kb --store {example})"
        )


def _check_continue(given: list[str]) -> None:
    """Stop when ``--continue`` comes with anything but ``--out`` (``given``: what else came):
    the knowledge base, embedder, strategies and chunking are the index's own."""
    if given:
        fail(
            f"--continue takes only --out, not {', '.join(given)}: it adds the dense part to "
            "the --out index, whose embedder, strategies and chunking are its own (from its "
            "manifest); write it to Milvus afterwards with `kbqa index --out DIR --store URI`"
        )


def _chunk_sizes(
    strats: list[Strategy], chunk_size: int | None, chunk_overlap: int | None
) -> dict[str, tuple[int, int]]:
    """``(chunk_size, chunk_overlap)`` per strategy: its own, or the options'."""
    if len(strats) > 1 and (chunk_size is not None or chunk_overlap is not None):
        fail("--chunk-size/--chunk-overlap set one strategy's chunking; not with --strategy both")
    sizes = {
        s.name: (
            s.chunk_size if chunk_size is None else chunk_size,
            s.chunk_overlap if chunk_overlap is None else chunk_overlap,
        )
        for s in strats
    }
    for size, overlap in sizes.values():
        if size <= 0 or not 0 <= overlap < size:
            fail(f"need chunk_size > 0 and 0 <= chunk_overlap < chunk_size, got {size}/{overlap}")
    return sizes


def _build(
    kb: Path,
    out: Path,
    embedder: str,
    dense: str,
    strats: list[Strategy],
    sizes: dict[str, tuple[int, int]],
    *,
    skip_bad_lines: bool,
    reuse: bool,
    allow_hard_links: bool = False,
) -> tuple[Any, BoilerplateModel, list[str], Any]:
    """Learn the recurring blocks, clean each strategy's documents and build the index(es).

    Returns:
        ``(build report, boilerplate model, skipped lines, embedder)``; exits on an error or an
        interruption (saying what was kept).
    """
    from tqdm.contrib.logging import logging_redirect_tqdm

    from kbqa.corpus.boilerplate import BoilerplateModel
    from kbqa.corpus.loaders import load_documents
    from kbqa.corpus.strategies import clean_documents
    from kbqa.embedders import load_embedder
    from kbqa.index import RECURRING_BLOCKS, StrategyInput, build_indexes
    from kbqa.index.embed_cache import BuildInterrupted

    skipped: list[str] = []
    passes = 0

    def read() -> Iterator[Document]:
        """The knowledge base; skipped lines are reported on the first pass only."""
        nonlocal passes
        passes += 1
        if passes > 1:
            return load_documents(
                kb, skip_bad_lines=skip_bad_lines, warn=False, allow_hard_links=allow_hard_links
            )
        return load_documents(
            kb, skip_bad_lines=skip_bad_lines, skipped=skipped, allow_hard_links=allow_hard_links
        )

    try:
        emb = load_embedder(embedder)
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
            when: Literal["now", "later"] = "later" if dense == "later" else "now"
            report = build_indexes(
                parts, out, emb, source=kb, reuse=reuse, multi=len(strats) > 1, dense=when
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
        fail(str(exc))
    return report, boilerplate, skipped, emb


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

    from kbqa.index import continue_index
    from kbqa.index.embed_cache import BuildInterrupted

    _interrupt_on_sigterm()
    t0 = time.perf_counter()
    try:
        with logging_redirect_tqdm():
            report = continue_index(out)
    except BuildInterrupted as exc:
        _interrupted(exc)
    except KBQAError as exc:
        fail(str(exc))
    if not report.chunks:
        typer.echo(f"{out}: the dense part is already built; nothing to do")
        return
    typer.echo(f"dense part added to {out}: questions now fuse BM25 and dense retrieval")
    print_embedding(report)
    typer.echo(f"time {'total':<10}{time.perf_counter() - t0:8.1f} s")
    typer.echo(f"{'peak RSS':<15}{report.peak_rss_mib:8.0f} MiB")
