"""Fetching for the crawler: one page at a time, politely (per-host delay, ``robots.txt``, size and
time limits), HTML only, redirects within the allowed hosts; URL normalisation (courlan) and link
extraction (lxml)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from kbqa.corpus.html import EXTRACT_MODES
from kbqa.errors import InputError
from kbqa.version import __version__

log = logging.getLogger("kbqa.crawl")

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

MAX_REDIRECTS = 5

USER_AGENT = f"kbqa/{__version__} (knowledge-base crawler)"

PAGE_TIME_FACTOR = 4
"""A page (and robots.txt) must download within this many ``timeout``s (the timeout applies
per read)."""

ROBOTS_MAX_BYTES = 500 * 1024
"""robots.txt beyond this is not read (RFC 9309, 2.5: a parsing limit of at least 500 KiB)."""

BINARY_MAGIC = (
    b"\x7fELF",
    b"%PDF",
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"MZ",
    b"\x00\x00\x01\x00",
    b"OggS",
    b"RIFF",
    b"ID3",
)
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


ROBOTS_MAX_REDIRECTS = 5
"""Redirects followed to find a robots.txt (RFC 9309, 2.3.1.2: at least five)."""


def _disallow_all(origin: str, why: str) -> RobotFileParser:
    """Rules that disallow everything, for a robots.txt that could not be reached (RFC 9309,
    2.3.1.4: a 5xx or a network error means complete disallow)."""
    log.warning(
        "robots.txt of %s unreachable (%s): nothing on %s is crawled (RFC 9309, "
        "2.3.1.4); --ignore-robots crawls it anyway",
        origin,
        why,
        origin,
    )
    parser = RobotFileParser()
    parser.parse(["User-agent: *", "Disallow: /"])
    return parser


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
        self._robots_unreachable: dict[str, str] = {}  # origin -> the skip reason of its pages
        self._robots_lock = threading.Lock()

    def allowed(self, url: str) -> bool:
        """The URL's host is the start host or one of ``allowed_hosts``."""
        return host_of(url) in self.hosts

    def _robots_for(self, url: str) -> RobotFileParser | None:
        """The rules of ``url``'s host, read once per host as RFC 9309 (2.3.1) says: a 2xx
        robots.txt is parsed; redirects are followed up to :data:`ROBOTS_MAX_REDIRECTS`, to any
        host; a 4xx ("unavailable") allows everything; a 5xx or a network error
        ("unreachable") disallows everything. The decision is logged once per host (a
        warning when it disallows everything). None: no rules."""
        parts = urlsplit(url)
        key = f"{parts.scheme}://{parts.netloc}"
        with self._robots_lock:
            if key not in self._robots:
                self._robots[key] = self._read_robots(key)
            return self._robots[key]

    def _read_robots(self, origin: str) -> RobotFileParser | None:
        location = f"{origin}/robots.txt"
        try:
            for _ in range(ROBOTS_MAX_REDIRECTS + 1):
                self._clock.wait(host_of(location))
                with self.client.stream("GET", location) as resp:
                    status = resp.status_code
                    if 200 <= status < 300:
                        body = self._read(resp, ROBOTS_MAX_BYTES, truncate=True)
                        parser = RobotFileParser()
                        parser.parse(body.decode("utf-8", "replace").splitlines())
                        moved = "" if location == f"{origin}/robots.txt" else f" (at {location})"
                        log.info("robots.txt of %s read%s", origin, moved)
                        return parser
                    target = resp.headers.get("location", "")
                if 300 <= status < 400 and target:
                    location = urljoin(location, target)
                    continue
                if 500 <= status < 600:
                    self._robots_unreachable[origin] = f"robots.txt unreachable (HTTP {status})"
                    return _disallow_all(origin, f"HTTP {status}")
                log.info(
                    "robots.txt of %s: HTTP %d, no rules: crawling it all (RFC 9309, 2.3.1.3)",
                    origin,
                    status,
                )
                return None
            log.info(
                "robots.txt of %s: more than %d redirects, no rules: crawling it all "
                "(RFC 9309, 2.3.1.2)",
                origin,
                ROBOTS_MAX_REDIRECTS,
            )
            return None
        except (httpx.HTTPError, Skip) as exc:
            why = (
                f"network error ({type(exc).__name__})"
                if isinstance(exc, httpx.HTTPError)
                else str(exc)
            )
            self._robots_unreachable[origin] = f"robots.txt unreachable: {why}"
            return _disallow_all(origin, f"{type(exc).__name__}: {exc}")

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
                origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
                raise Skip(self._robots_unreachable.get(origin, "disallowed by robots.txt"))
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
