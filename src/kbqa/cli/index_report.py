"""What ``kbqa index`` prints after a build: the recurring blocks learned, each strategy's
chunks, the embedding's counts and the time of each stage."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from kbqa.corpus.boilerplate import BoilerplateModel
    from kbqa.index.store import BuildReport

TOP_BLOCKS = 10
"""Recurring blocks `kbqa index` prints; all of them go to the index directory."""


def print_blocks(boilerplate: BoilerplateModel) -> None:
    """The number of recurring blocks learned and the :data:`TOP_BLOCKS` most widespread."""
    from kbqa.index import RECURRING_BLOCKS

    rows = boilerplate.report(TOP_BLOCKS)
    n_blocks = sum(len(b) for b in boilerplate.blocks.values())
    share = f"{boilerplate.min_share:.0%}"
    typer.echo(
        f"recurring      {n_blocks} block{'' if n_blocks == 1 else 's'} learned (lines on {share} "
        "or more of a site's pages, "
        "cut from chunks as boilerplate)" + (", most widespread:" if rows else "")
    )
    for site, block, n, total in rows:
        # a KB without URLs is one site: its documents are counted, not its host
        where = f"pages of {site}" if site else "documents without a URL"
        typer.echo(f"  {n}/{total} {where}: {block[:80]!r}")
    if n_blocks > len(rows):
        typer.echo(f"  ... all {n_blocks} in {RECURRING_BLOCKS} in the index directory")


def print_strategies(
    report: BuildReport, sizes: dict[str, tuple[int, int]], out: Path, *, several: bool
) -> None:
    """Each strategy's chunking (``sizes``: ``(size, overlap)`` in characters), chunks, and
    documents its cleaning left empty."""
    for name, counts in report.per_strategy.items():
        size, overlap = sizes[name]
        where = f" in {out / name}" if several else ""
        typer.echo(
            f"strategy       {name} ({size}/{overlap} characters): {counts['chunks']} chunks{where}"
        )
        if counts["empty_documents"]:
            typer.echo(
                f"  {counts['empty_documents']} documents left no text after {name} cleaning "
                "(made only of recurring blocks) and are not indexed"
            )


def print_embedding(report: BuildReport) -> None:
    """The static table's words, and the chunk texts embedded, reused and resumed."""
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


def print_times(report: BuildReport, total: float, *, loaded_embedder: bool) -> None:
    """Each stage's seconds, the rest (``other``), the total and the peak RSS."""
    for stage, sec in report.stage_seconds.items():
        part = "  (part of dense)" if stage == "distil" else ""
        typer.echo(f"time {stage:<10}{sec:8.1f} s{part}")
    other = total - sum(s for k, s in report.stage_seconds.items() if k != "distil")
    what = "the boilerplate pass over the KB"
    what += ", loading the embedder" if loaded_embedder else ""
    typer.echo(f"time {'other':<10}{max(other, 0.0):8.1f} s  ({what})")
    typer.echo(f"time {'total':<10}{total:8.1f} s")
    typer.echo(f"{'peak RSS':<15}{report.peak_rss_mib:8.0f} MiB")
