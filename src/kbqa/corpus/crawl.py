"""Breadth-first website crawler to a JSON Lines corpus (``kbqa crawl``).

From the type-aware RAG seed (a BFS crawl of eecs.berkeley.edu into a JSONL corpus). HTTP is
httpx, URL normalisation and tracking-parameter removal courlan, link extraction lxml, text
extraction trafilatura (favouring recall), ``robots.txt`` the standard library's parser.

The crawl stays on the start URL's host (plus ``allowed_hosts``), follows redirects only within
them, fetches each normalised URL once, keeps HTML only, and is resumable: the frontier and the
set of seen URLs are saved next to the output (``<out>.crawl-state.json``) after every page, so a
second run with the same ``--out`` continues where the first stopped.

Each output line is a document ``kbqa index`` reads directly: ``doc_id`` (the final URL),
``url``, ``final_url``, ``title``, ``text``, ``fetched_at`` (ISO 8601, UTC), ``depth`` and, with
``keep_html``, ``html``.

Fetching (robots.txt, redirects, limits) is in :mod:`kbqa.corpus.fetch`.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import httpx

from kbqa.corpus.fetch import CrawlConfig, Crawler, Skip, normalize_url
from kbqa.corpus.html import decode_html, html_to_text
from kbqa.errors import InputError

log = logging.getLogger("kbqa.crawl")

STATE_SUFFIX = ".crawl-state.json"
Fetched = tuple[str, int, str, bytes, "str | None"]
"""A fetched page: ``(url, depth, final_url, body, charset)``."""

__all__ = ["CrawlConfig", "CrawlReport", "CrawlState", "crawl", "normalize_url"]


@dataclass
class CrawlReport:
    """What a crawl did.

    Attributes:
        pages: Pages saved (this run).
        bytes: Body bytes of the saved pages.
        seconds: Wall time of this run.
        skipped: Count of URLs not saved, by reason.
        examples: One URL per skip reason.
        resumed_pages: Pages saved by earlier runs of the same crawl.
        frontier_left: URLs still queued when the crawl stopped (page limit).
    """

    pages: int = 0
    bytes: int = 0
    seconds: float = 0.0
    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    resumed_pages: int = 0
    frontier_left: int = 0

    def skip(self, reason: str, url: str) -> None:
        """Count a skipped URL."""
        self.skipped[reason] += 1
        self.examples.setdefault(reason, url)
        log.info("skip %s: %s", reason, url)


@dataclass
class CrawlState:
    """What a crawl remembers between runs (saved next to the output after every batch): the
    frontier of ``(url, depth)`` still to fetch, the normalised URLs seen, the digests of the
    pages saved and how many were saved. ``beyond`` (links past ``max_depth``, counted once) is
    not saved: a re-run with a larger ``--max-depth`` may want them."""

    start: str
    frontier: deque[tuple[str, int]]
    seen: set[str]
    digests: set[str] = field(default_factory=set)
    pages: int = 0
    beyond: set[str] = field(default_factory=set)

    @classmethod
    def open(cls, out_path: Path, start: str, report: CrawlReport) -> CrawlState:
        """Resume the crawl saved beside ``out_path``, or start one from ``start``.

        Raises:
            InputError: ``out_path`` is a directory, exists without a crawl state, belongs to a
                crawl of another start URL, or holds fewer pages than its state says.
        """
        state_path = _state_path(out_path)
        if out_path.is_dir():
            raise InputError(f"cannot write the corpus to {out_path}: it is a directory")
        if not state_path.is_file():
            if out_path.exists() and out_path.stat().st_size > 0:
                raise InputError(
                    f"{out_path} exists and has no crawl state ({state_path.name}); use another "
                    "--out"
                )
            out_path.parent.mkdir(parents=True, exist_ok=True)
            return cls(start, deque([(start, 0)]), {start})
        saved_state = _load_state(state_path)
        if saved_state.get("start") != start:
            raise InputError(
                f"{out_path} belongs to a crawl of {saved_state.get('start')}, not {start}; "
                "use another --out"
            )
        n_saved, saved = _saved_pages(out_path)
        if n_saved < int(saved_state["pages"]):
            raise InputError(
                f"{out_path} holds {n_saved} pages but its crawl state "
                f"({state_path.name}) says {saved_state['pages']} were saved: the file was "
                "changed. Use another --out, or delete the state file to start over"
            )
        report.resumed_pages = n_saved
        # pages written after the state was last saved (a kill between the two): keep them,
        # and do not fetch them again
        frontier = deque((u, d) for u, d in saved_state["frontier"] if u not in saved)
        seen = set(saved_state["seen"]) | saved
        return cls(start, frontier, seen, set(saved_state.get("digests", [])), n_saved)

    def save(self, path: Path) -> None:
        _save_state(
            path,
            {
                "start": self.start,
                "frontier": list(self.frontier),
                "seen": sorted(self.seen),
                "digests": sorted(self.digests),
                "pages": self.pages,
            },
        )

    def admit_redirect(self, url: str, final: str, report: CrawlReport) -> bool:
        """False for a page that redirected to one already seen (skipped); else marks the final
        URL seen."""
        final_key = normalize_url(final) or final
        if final_key != url:
            if final_key in self.seen:
                report.skip("redirect to a page already seen", url)
                return False
            self.seen.add(final_key)
        return True

    def follow(self, links: list[str], depth: int, max_depth: int, report: CrawlReport) -> None:
        """Queue the unseen ``links`` of a page at ``depth`` (those beyond ``max_depth`` are
        counted once as skipped, not marked seen)."""
        for link in links:
            if link in self.seen:
                continue
            if depth >= max_depth:
                if link not in self.beyond:
                    self.beyond.add(link)
                    report.skip("beyond max_depth", link)
                continue
            self.seen.add(link)
            self.frontier.append((link, depth + 1))


def _page_record(
    page: Fetched, cfg: CrawlConfig, crawler: Crawler, state: CrawlState, report: CrawlReport
) -> dict[str, Any] | None:
    """Extract a fetched page's text and queue its links; the corpus record, or None for a page
    with no text or the same text as one already saved (skipped)."""
    url, depth, final, body, charset = page
    html = decode_html(body, charset)
    title, text = html_to_text(html, cfg.extract)
    state.follow(list(crawler.links(html, final)), depth, cfg.max_depth, report)
    if not text.strip():
        report.skip("no text extracted", url)
        return None
    digest = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()
    if digest in state.digests:  # e.g. "/" and "/index.html"
        report.skip("same text as a page already saved", url)
        return None
    state.digests.add(digest)
    record = {
        "doc_id": final,
        "url": url,
        "final_url": final,
        "title": title,
        "text": text,
        "fetched_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "depth": depth,
    }
    if cfg.keep_html:
        record["html"] = html
    return record


def crawl(
    start_url: str,
    out: str | Path,
    config: CrawlConfig | None = None,
    *,
    client: httpx.Client | None = None,
    progress: bool = True,
) -> CrawlReport:
    """Crawl breadth-first from ``start_url`` into the JSON Lines file ``out``.

    Args:
        start_url: First page; its host bounds the crawl.
        out: Output file. When ``<out>.crawl-state.json`` exists the crawl resumes (same start
            URL required); records are appended.
        config: Limits (default :class:`CrawlConfig`).
        client: httpx client to use (tests).
        progress: Show a progress bar (pages, pages/s).

    Returns:
        What was saved and skipped.

    Raises:
        InputError: ``out`` is a directory, or exists without a crawl state (it would be
            appended to blindly), or its state belongs to another start URL; the start URL
            does not answer at all.
    """
    from tqdm import tqdm

    cfg = config or CrawlConfig()
    crawler = Crawler(start_url, cfg, client)
    out_path = Path(out)
    state_path = _state_path(out_path)
    report = CrawlReport()
    state = CrawlState.open(out_path, crawler.start, report)
    t0 = time.perf_counter()
    bar = tqdm(
        total=cfg.max_pages, initial=state.pages, desc="crawl", unit="page", disable=not progress
    )

    def work(item: tuple[str, int]) -> Fetched | Skip:
        url, depth = item
        try:
            final, body, charset = crawler.fetch(url, state.seen)
        except Skip as skip:
            return skip
        return url, depth, final, body, charset

    pool = ThreadPoolExecutor(cfg.concurrency)
    batch: list[tuple[str, int]] = []
    try:
        with out_path.open("a", encoding="utf-8") as fh:
            while state.frontier and state.pages < cfg.max_pages:
                n = min(cfg.concurrency, len(state.frontier))
                batch = [state.frontier.popleft() for _ in range(n)]
                _save_batch(batch, pool.map(work, batch), fh, crawler, state, report, bar.update)
                state.save(state_path)
    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: keep what was saved, requeue
        state.frontier.extendleft(reversed(batch))
        pool.shutdown(wait=False, cancel_futures=True)
        if state.pages:
            state.save(state_path)
        bar.close()
        if state.pages == 0 and out_path.is_file() and out_path.stat().st_size == 0:
            out_path.unlink()
        raise
    pool.shutdown()
    bar.close()
    report.seconds = time.perf_counter() - t0
    report.frontier_left = len(state.frontier)
    if state.pages == 0:  # nothing to resume from: leave no state or empty file behind
        state_path.unlink(missing_ok=True)
        if out_path.is_file() and out_path.stat().st_size == 0:
            out_path.unlink()
    if state.pages == 0 and report.skipped:
        reason, count = report.skipped.most_common(1)[0]
        raise InputError(
            f"no page saved from {crawler.start}: {count} URL(s) skipped, mostly '{reason}' "
            f"(e.g. {report.examples[reason]})"
        )
    return report


def _save_batch(
    batch: list[tuple[str, int]],
    results: Iterable[Fetched | Skip],
    fh: TextIO,
    crawler: Crawler,
    state: CrawlState,
    report: CrawlReport,
    saved: Callable[[int], Any],
) -> None:
    """Write the pages of a fetched batch (``results`` in ``batch``'s order) until
    ``max_pages``; the rest of the batch goes back to the front of the frontier. ``saved(1)``
    is called per page written (the progress bar)."""
    cfg = crawler.config
    for i, (item, result) in enumerate(zip(batch, results, strict=True)):
        if isinstance(result, Skip):
            report.skip(str(result.args[0]), item[0])
            continue
        if not state.admit_redirect(result[0], result[2], report):
            continue
        if state.pages >= cfg.max_pages:
            # not saved: keep it and the rest of the batch for a later run
            state.frontier.extendleft(reversed(batch[i:]))
            break
        record = _page_record(result, cfg, crawler, state, report)
        if record is not None:
            _write_record(fh, record)
            state.pages += 1
            report.pages += 1
            report.bytes += len(result[3])
            saved(1)


def _write_record(fh: TextIO, record: dict[str, Any]) -> None:
    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    fh.flush()


def _load_state(path: Path) -> dict[str, Any]:
    """The saved crawl state; a damaged one is an error that names the file."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(state, dict):
            raise ValueError("not a JSON object")
        for key in ("start", "frontier", "seen", "pages"):
            if key not in state:
                raise ValueError(f"no {key!r}")
        [(str(u), int(d)) for u, d in state["frontier"]]
        int(state["pages"])
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(
            f"the crawl state {path} is damaged ({exc}); delete it to start the crawl over"
        ) from None
    return state


def _saved_pages(out: Path) -> tuple[int, set[str]]:
    """Pages in a corpus file and their normalised URLs (requested and final). A torn last
    line (a kill in the middle of writing it) is cut off."""
    if not out.is_file():
        return 0, set()
    data = out.read_bytes()
    if data and not data.endswith(b"\n"):
        cut = data.rfind(b"\n") + 1
        log.warning("%s: dropping a torn last line (%d bytes)", out, len(data) - cut)
        with out.open("r+b") as fh:
            fh.truncate(cut)
        data = data[:cut]
    urls: set[str] = set()
    lines = data.decode("utf-8", errors="replace").splitlines()
    for n, line in enumerate(lines, start=1):
        try:
            rec = json.loads(line)
        except ValueError:
            raise InputError(f"{out}:{n} is not a crawl record; use another --out") from None
        for key in ("url", "final_url"):
            if isinstance(rec, dict) and isinstance(rec.get(key), str):
                urls.add(normalize_url(rec[key]) or rec[key])
    return len(lines), urls


def _state_path(out: Path) -> Path:
    return out.with_name(out.name + STATE_SUFFIX)


def _save_state(path: Path, state: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(state), encoding="utf-8")
    os.replace(tmp, path)
