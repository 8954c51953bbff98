"""``kbqa crawl``: crawl a website breadth-first into a JSON Lines knowledge base."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from kbqa.cli.app import app, fail
from kbqa.errors import KBQAError


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
    ignore_robots: Annotated[
        bool,  # a flag: no --no- form to widen the help's option column
        typer.Option("--ignore-robots", help="Do not honour robots.txt."),
    ] = False,
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
        fail(str(exc))
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
