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
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from kbqa import __version__
from kbqa.corpus.html import EXTRACT_MODES, decode_html, html_to_text
from kbqa.errors import InputError

log = logging.getLogger("kbqa.crawl")

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
MAX_REDIRECTS = 5
USER_AGENT = f"kbqa/{__version__} (knowledge-base crawler)"
STATE_SUFFIX = ".crawl-state.json"
PAGE_TIME_FACTOR = 4
"""A page (and robots.txt) must download within this many ``timeout``s (the timeout applies
per read)."""
ROBOTS_MAX_BYTES = 500 * 1024
"""robots.txt beyond this is not read (RFC 9309, 2.5: a parsing limit of at least 500 KiB)."""
BINARY_MAGIC = (b"\x7fELF", b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04",
                b"\x1f\x8b", b"MZ", b"\x00\x00\x01\x00", b"OggS", b"RIFF", b"ID3")  # fmt: skip
"""Starts of common binary formats (executables, PDF, images, archives, audio)."""


def looks_binary(body: bytes) -> bool:
    """True for bytes that are not a text page whatever the Content-Type says: a known binary
    signature at the start, or a NUL byte in the first 4 KiB (HTML in UTF-8 or a legacy
    charset has none; UTF-16 pages are rare enough to skip)."""
    return body.startswith(BINARY_MAGIC) or b"\x00" in body[:4096]


@dataclass(frozen=True)
class CrawlConfig:
    """Crawl limits.

    Attributes:
        max_pages: Pages to save (> 0).
        max_depth: Link hops from the start URL (0 = the start page only).
        allowed_hosts: Hosts besides the start URL's that may be crawled (e.g. sibling
            subdomains); host names, compared case-insensitively, ports included if given.
        delay: Seconds between two requests to the same host.
        concurrency: Requests in flight at once (across hosts).
        timeout: Seconds for connecting and for each read.
        max_bytes: Largest page body read; larger pages are skipped.
        keep_html: Store the raw HTML in each record.
        extract: ``full`` (every visible text block, boilerplate left for the index strategies
            to remove) or ``main`` (trafilatura's main content); see :mod:`kbqa.corpus.html`.
        respect_robots: Honour ``robots.txt``.
        user_agent: The ``User-Agent`` header (and the robots.txt agent).
    """

    max_pages: int = 100
    max_depth: int = 5
    allowed_hosts: tuple[str, ...] = ()
    delay: float = 0.5
    concurrency: int = 2
    timeout: float = 10.0
    max_bytes: int = 5_000_000
    keep_html: bool = False
    extract: str = "full"
    respect_robots: bool = True
    user_agent: str = USER_AGENT

    def __post_init__(self) -> None:
        for name in ("max_pages", "concurrency", "max_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        for name in ("max_depth", "delay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not 0 < self.timeout < 3600:
            raise ValueError(f"timeout must be > 0 and < 3600 seconds, got {self.timeout!r}")
        if not 0 <= self.delay < 3600:  # also refuses nan and inf
            raise ValueError(f"delay must be >= 0 and < 3600 seconds, got {self.delay!r}")
        if self.extract not in EXTRACT_MODES:
            raise ValueError(
                f"extract must be one of {', '.join(EXTRACT_MODES)}, got {self.extract!r}"
            )


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


class Skip(Exception):
    """A URL is not saved; ``args[0]`` is the reason."""


def normalize_url(url: str, base: str | None = None) -> str | None:
    """Absolute, normalised http(s) URL, or None for other schemes and malformed links.

    Lower-cases scheme and host, drops default ports, the fragment, tracking parameters
    (``utm_*``, ``fbclid``, session ids: courlan's list) and a trailing slash on non-root paths,
    and sorts the query. ``mailto:``, ``javascript:``, ``tel:`` and ``data:`` give None.
    """
    import courlan

    url = url.strip()
    if base is not None:
        url = urljoin(base, url)
    url = urldefrag(url)[0]
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    try:
        out = courlan.normalize_url(url, strict=False, trailing_slash=False)
    except ValueError:
        return None
    return urldefrag(out)[0] or None


def host_of(url: str) -> str:
    """``host`` or ``host:port`` of a URL, lower-cased."""
    return urlsplit(url).netloc.lower()


class _HostClock:
    """At most one request per ``delay`` seconds per host, across threads."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, host: str) -> None:
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next.get(host, now))
            self._next[host] = start + self.delay
        if start > now:
            time.sleep(start - now)


class Crawler:
    """One crawl: frontier, seen set, robots rules and the HTTP client.

    Args:
        start_url: Where the crawl begins; its host is allowed.
        config: Limits.
        client: An httpx client (tests pass one with a mock transport); default: a new one.

    Raises:
        InputError: ``start_url`` is not an absolute http(s) URL.
    """

    def __init__(
        self, start_url: str, config: CrawlConfig, client: httpx.Client | None = None
    ) -> None:
        start = normalize_url(start_url)
        if start is None:
            raise InputError(f"not an http(s) URL: {start_url!r}")
        self.start = start
        self.config = config
        self.hosts = {host_of(start)} | {h.lower() for h in config.allowed_hosts}
        self.client = client or httpx.Client(
            headers={"User-Agent": config.user_agent},
            timeout=config.timeout,
            follow_redirects=False,
        )
        self._clock = _HostClock(config.delay)
        self._robots: dict[str, RobotFileParser | None] = {}
        self._robots_lock = threading.Lock()

    def allowed(self, url: str) -> bool:
        """The URL's host is the start host or one of ``allowed_hosts``."""
        return host_of(url) in self.hosts

    def _robots_for(self, url: str) -> RobotFileParser | None:
        parts = urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc}"
        with self._robots_lock:
            if key in self._robots:
                return self._robots[key]
            parser: RobotFileParser | None = None
            try:
                self._clock.wait(parts.netloc.lower())
                with self.client.stream("GET", f"{key}/robots.txt") as resp:
                    if resp.status_code == 200:
                        body = self._read(resp, ROBOTS_MAX_BYTES, truncate=True)
                        parser = RobotFileParser()
                        parser.parse(body.decode("utf-8", "replace").splitlines())
            except (httpx.HTTPError, Skip) as exc:
                log.info("robots.txt of %s unreadable (%s): crawling without it", key, exc)
            self._robots[key] = parser
            return parser

    def _read(self, resp: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
        """The body of a streamed response, read within ``limit`` bytes and
        :data:`PAGE_TIME_FACTOR` timeouts.

        Raises:
            Skip: The body is larger than ``limit`` (unless ``truncate``: then its first
                ``limit`` bytes are returned), or it did not arrive in time (a server dripping
                bytes).
        """
        length = resp.headers.get("content-length", "")
        if not truncate and length.isdigit() and int(length) > limit:
            raise Skip("larger than max_bytes")
        body = bytearray()
        deadline = time.monotonic() + PAGE_TIME_FACTOR * self.config.timeout
        for chunk in resp.iter_bytes():
            body += chunk
            if len(body) > limit:
                if truncate:
                    return bytes(body[:limit])
                raise Skip("larger than max_bytes")
            if time.monotonic() > deadline:
                raise Skip("took too long to download")
        return bytes(body)

    def robots_allow(self, url: str) -> bool:
        """``robots.txt`` lets our user agent fetch ``url`` (True when there is none)."""
        if not self.config.respect_robots:
            return True
        parser = self._robots_for(url)
        return parser is None or parser.can_fetch(self.config.user_agent, url)

    def fetch(
        self, url: str, seen: set[str] | frozenset[str] = frozenset()
    ) -> tuple[str, bytes, str | None]:
        """GET an HTML page, following redirects inside the allowed hosts.

        A redirect to a URL in ``seen`` (queued or fetched already) is not followed.

        Returns:
            ``(final_url, body, charset)``: the URL the page was fetched from (as the server
            spelled it, for resolving relative links; :func:`normalize_url` gives its identity),
            and ``charset`` from the Content-Type header, if any.

        Raises:
            Skip: Off-host redirect, redirect to a seen page, robots.txt, HTTP error status,
                not HTML (by Content-Type, or binary bytes whatever it says), larger than
                ``max_bytes``, too slow to download, too many redirects, or a network error.
        """
        for _ in range(MAX_REDIRECTS + 1):
            if not self.robots_allow(url):
                raise Skip("disallowed by robots.txt")
            self._clock.wait(host_of(url))
            try:
                with self.client.stream("GET", url) as resp:
                    if resp.is_redirect:
                        if not resp.headers.get("location", "").strip():
                            raise Skip("redirect without a Location")
                        location = urljoin(url, resp.headers["location"].strip())
                        target = normalize_url(location)
                        if target is None:
                            raise Skip("redirect to a non-http URL")
                        if not self.allowed(target):
                            raise Skip("redirect off the allowed hosts")
                        if target == normalize_url(url):
                            # the same page under another spelling (a server adding the
                            # trailing slash the normalised URL lacks): fetch it as given
                            url = urldefrag(location)[0]
                            continue
                        if target in seen:
                            raise Skip("redirect to a page already seen")
                        url = target
                        continue
                    if resp.status_code >= 400:
                        raise Skip(f"HTTP {resp.status_code}")
                    ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
                    if ctype and ctype not in HTML_TYPES:
                        raise Skip(f"not HTML ({ctype})")
                    body = self._read(resp, self.config.max_bytes)
                    if looks_binary(body):  # an executable served as text/html
                        raise Skip("not HTML (binary content)")
                    return url, body, resp.charset_encoding
            except httpx.TimeoutException:
                raise Skip("timeout") from None
            except httpx.HTTPError as exc:
                raise Skip(f"network error ({type(exc).__name__})") from None
        raise Skip("too many redirects")

    def links(self, html: str, base: str) -> Iterator[str]:
        """Normalised http(s) ``<a href>`` targets of a page on the allowed hosts."""
        import lxml.html
        from lxml.etree import ParserError

        try:
            doc = lxml.html.document_fromstring(html)
        except (ParserError, ValueError):
            return
        doc.make_links_absolute(base, resolve_base_href=True, handle_failures="discard")
        for element, attribute, link, _ in doc.iterlinks():
            if element.tag != "a" or attribute != "href":
                continue
            url = normalize_url(link)
            if url is not None and self.allowed(url):
                yield url


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
    if out_path.is_dir():
        raise InputError(f"cannot write the corpus to {out_path}: it is a directory")
    report = CrawlReport()
    if state_path.is_file():
        state = _load_state(state_path)
        if state.get("start") != crawler.start:
            raise InputError(
                f"{out_path} belongs to a crawl of {state.get('start')}, not {crawler.start}; "
                "use another --out"
            )
        frontier: deque[tuple[str, int]] = deque((u, d) for u, d in state["frontier"])
        seen: set[str] = set(state["seen"])
        digests: set[str] = set(state.get("digests", []))
        n_saved, saved = _saved_pages(out_path)
        if n_saved < int(state["pages"]):
            raise InputError(
                f"{out_path} holds {n_saved} pages but its crawl state "
                f"({state_path.name}) says {state['pages']} were saved: the file was changed. "
                "Use another --out, or delete the state file to start over"
            )
        # pages written after the state was last saved (a kill between the two): keep them,
        # and do not fetch them again
        seen.update(saved)
        frontier = deque(item for item in frontier if item[0] not in saved)
        report.resumed_pages = n_saved
    elif out_path.exists() and out_path.stat().st_size > 0:
        raise InputError(
            f"{out_path} exists and has no crawl state ({state_path.name}); use another --out"
        )
    else:
        out_path.parent.mkdir(parents=True, exist_ok=True)
        frontier = deque([(crawler.start, 0)])
        seen = {crawler.start}
        digests = set()
    pages_total = report.resumed_pages
    beyond: set[str] = set()
    t0 = time.perf_counter()
    bar = tqdm(total=cfg.max_pages, initial=pages_total, desc="crawl", unit="page",
               disable=not progress)  # fmt: skip

    def work(item: tuple[str, int]) -> tuple[str, int, str, bytes, str | None] | Skip:
        url, depth = item
        try:
            final, body, charset = crawler.fetch(url, seen)
        except Skip as skip:
            return skip
        return url, depth, final, body, charset

    def save() -> None:
        _save_state(
            state_path,
            {
                "start": crawler.start,
                "frontier": list(frontier),
                "seen": sorted(seen),
                "digests": sorted(digests),
                "pages": pages_total,
            },
        )

    pool = ThreadPoolExecutor(cfg.concurrency)
    batch: list[tuple[str, int]] = []
    try:
        with out_path.open("a", encoding="utf-8") as fh:
            while frontier and pages_total < cfg.max_pages:
                batch = [frontier.popleft() for _ in range(min(cfg.concurrency, len(frontier)))]
                for i, (item, result) in enumerate(zip(batch, pool.map(work, batch), strict=True)):
                    if isinstance(result, Skip):
                        report.skip(str(result.args[0]), item[0])
                        continue
                    url, depth, final, body, charset = result
                    final_key = normalize_url(final) or final
                    if final_key != url:
                        if final_key in seen:
                            report.skip("redirect to a page already seen", url)
                            continue
                        seen.add(final_key)
                    if pages_total >= cfg.max_pages:
                        # not saved: keep it and the rest of the batch for a later run
                        frontier.extendleft(reversed(batch[i:]))
                        break
                    html = decode_html(body, charset)
                    title, text = html_to_text(html, cfg.extract)
                    for link in crawler.links(html, final):
                        if link in seen:
                            continue
                        if depth >= cfg.max_depth:
                            if link not in beyond:  # counted once, not marked seen (a rerun
                                beyond.add(link)  # with a larger --max-depth may want it)
                                report.skip("beyond max_depth", link)
                            continue
                        seen.add(link)
                        frontier.append((link, depth + 1))
                    if not text.strip():
                        report.skip("no text extracted", url)
                        continue
                    digest = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()
                    if digest in digests:  # e.g. "/" and "/index.html"
                        report.skip("same text as a page already saved", url)
                        continue
                    digests.add(digest)
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
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                    fh.flush()
                    pages_total += 1
                    report.pages += 1
                    report.bytes += len(body)
                    bar.update(1)
                save()

    except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: keep what was saved, requeue
        frontier.extendleft(reversed(batch))
        pool.shutdown(wait=False, cancel_futures=True)
        if pages_total:
            save()
        bar.close()
        if pages_total == 0 and out_path.is_file() and out_path.stat().st_size == 0:
            out_path.unlink()
        raise
    pool.shutdown()
    bar.close()
    report.seconds = time.perf_counter() - t0
    report.frontier_left = len(frontier)
    if pages_total == 0:  # nothing to resume from: leave no state or empty file behind
        state_path.unlink(missing_ok=True)
        if out_path.is_file() and out_path.stat().st_size == 0:
            out_path.unlink()
    if pages_total == 0 and report.skipped:
        reason, count = report.skipped.most_common(1)[0]
        raise InputError(
            f"no page saved from {crawler.start}: {count} URL(s) skipped, mostly '{reason}' "
            f"(e.g. {report.examples[reason]})"
        )
    return report
