"""Web search for questions the knowledge base cannot answer (HybridRAG-BN's last resort).

- :class:`WebSearch` is the protocol the ``web_search`` node calls.
- :class:`DDGSWebSearch` queries DuckDuckGo through ``ddgs`` (the maintained successor of
  ``duckduckgo-search``): backend pinned, a hard time limit per search (the call runs in a worker
  thread that is abandoned when late), a small result cap, an in-process cache, and exponential
  back-off (30 s doubling to 10 min) after any failure: ddgs reports a blocked request and an
  empty result alike as "No results found", and a dead network would otherwise cost every
  unresolved question the full timeout. Every failure is raised as :class:`WebSearchError`;
  the node turns it into ``web: unavailable`` and an abstention.
- :class:`StaticWebSearch` answers from a fixed list (tests, demos, offline Studio sessions).

Web text is untrusted: the node shows it to the LLM as quoted data and it never changes routing.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable

from kbqa.errors import KBQAError
from kbqa.state import WebResult

DDGS_BACKEND = "duckduckgo"
"""The one ddgs backend queried (pinned: ddgs's default ``auto`` fans out to several engines)."""
CACHE_SIZE = 256
BACKOFF_START = 30.0
"""Seconds searches are skipped after a first failure; doubles per failure."""
BACKOFF_MAX = 600.0


class WebSearchError(KBQAError):
    """A web search failed: no network, timeout, rate limit or a bad reply."""


@runtime_checkable
class WebSearch(Protocol):
    """Searches the web; implementations raise :class:`WebSearchError` on any failure."""

    name: str

    def search(self, query: str, max_results: int, timeout: float) -> list[WebResult]:
        """At most ``max_results`` hits for ``query``, within ``timeout`` seconds."""
        ...


class DDGSWebSearch:
    """DuckDuckGo through ``ddgs``.

    Args:
        backend: ddgs backend (default :data:`DDGS_BACKEND`).
        region: ddgs region code.
        proxy: Proxy URL handed to ddgs (also how tests point it at a local stand-in server).
    """

    name = "ddgs"

    def __init__(
        self, backend: str = DDGS_BACKEND, region: str = "wt-wt", proxy: str | None = None
    ) -> None:
        self.backend = backend
        self.region = region
        self.proxy = proxy
        self._cache: OrderedDict[tuple[str, int], list[WebResult]] = OrderedDict()
        self._lock = threading.Lock()
        self._blocked_until = 0.0
        self._backoff = BACKOFF_START

    def search(self, query: str, max_results: int, timeout: float) -> list[WebResult]:
        """Search, or raise :class:`WebSearchError` within about ``timeout`` seconds."""
        key = (query, max_results)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            wait = self._blocked_until - time.monotonic()
        if wait > 0:
            raise WebSearchError(f"backing off after a failed search for {wait:.0f} s more")
        box: dict[str, object] = {}

        def work() -> None:
            try:
                box["results"] = self._query(query, max_results, timeout)
            except WebSearchError as exc:
                box["error"] = exc

        # a daemon thread per search: a hung request is abandoned, never waited for (not by a
        # later search, not at interpreter exit)
        worker = threading.Thread(target=work, name="kbqa-web", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive() or "error" in box:
            error = box.get("error") or WebSearchError(f"no reply within {timeout:g} s")
            self._back_off()
            raise error  # type: ignore[misc]
        results: list[WebResult] = box["results"]  # type: ignore[assignment]
        with self._lock:
            self._backoff = BACKOFF_START
            self._cache[key] = results
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return results

    def _back_off(self) -> None:
        """After any failure, skip searches for a while (doubling up to :data:`BACKOFF_MAX`):
        without a network every unresolved question would otherwise wait the full timeout."""
        with self._lock:
            self._blocked_until = time.monotonic() + self._backoff
            self._backoff = min(self._backoff * 2, BACKOFF_MAX)

    def _query(self, query: str, max_results: int, timeout: float) -> list[WebResult]:
        try:
            from ddgs import DDGS
            from ddgs.exceptions import DDGSException, RatelimitException
        except ImportError as exc:
            raise WebSearchError("web search needs the package ddgs: pip install ddgs") from exc
        try:
            rows = DDGS(proxy=self.proxy, timeout=max(1, int(timeout))).text(
                query, region=self.region, backend=self.backend, max_results=max_results
            )
        except RatelimitException as exc:
            raise WebSearchError(f"rate limited by the search engine: {exc}") from None
        except DDGSException as exc:
            raise WebSearchError(f"{type(exc).__name__}: {exc}") from None
        except Exception as exc:  # a transport error of any kind is a soft failure here
            raise WebSearchError(f"{type(exc).__name__}: {exc}") from None
        return [
            WebResult(
                title=str(r.get("title") or ""),
                url=str(r.get("href") or r.get("url") or ""),
                snippet=str(r.get("body") or r.get("snippet") or ""),
            )
            for r in rows[:max_results]
            if isinstance(r, dict)
        ]


class StaticWebSearch:
    """Deterministic stand-in: returns ``results`` whose text shares a word with the query.

    Args:
        results: The whole "web".
        fail: When set, every search raises :class:`WebSearchError` with this message.
    """

    name = "static"

    def __init__(self, results: list[WebResult], fail: str | None = None) -> None:
        self.results = results
        self.fail = fail
        self.queries: list[str] = []

    @classmethod
    def from_file(cls, path: str | Path) -> StaticWebSearch:
        """Load ``[{"title", "url", "snippet"}, ...]`` from a JSON file.

        Raises:
            WebSearchError: Missing or malformed file.
        """
        try:
            rows = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls(
                [
                    WebResult(title=str(r["title"]), url=str(r["url"]), snippet=str(r["snippet"]))
                    for r in rows
                ]
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise WebSearchError(f"cannot read web results from {path}: {exc}") from None

    def search(self, query: str, max_results: int, timeout: float) -> list[WebResult]:
        from kbqa.retrieval.tokenizer import tokenize

        self.queries.append(query)
        if self.fail:
            raise WebSearchError(self.fail)
        words = set(tokenize(query))
        hits = [r for r in self.results if words & set(tokenize(f"{r['title']} {r['snippet']}"))]
        return hits[:max_results]


_REGISTRY: dict[str, WebSearch] = {}


def register_web_search(name: str, search: WebSearch) -> None:
    """Make ``search`` available as ``Context(web_search=name)``."""
    _REGISTRY[name] = search


def known_web_search(name: str) -> bool:
    """``name`` is one :func:`load_web_search` accepts (the static file is not read here)."""
    if name.startswith("static:"):
        return Path(name.removeprefix("static:")).is_file()
    return name in ("ddgs", "off") or name in _REGISTRY


def load_web_search(name: str) -> WebSearch | None:
    """The web search called ``name``: ``ddgs`` (shared instance), ``off`` (None),
    ``static:PATH`` (a JSON file of results), or a name given to :func:`register_web_search`.

    Raises:
        WebSearchError: Unknown name or unreadable static file.
    """
    if name == "off":
        return None
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name == "ddgs":
        _REGISTRY[name] = DDGSWebSearch()
        return _REGISTRY[name]
    if name.startswith("static:"):
        _REGISTRY[name] = StaticWebSearch.from_file(name.removeprefix("static:"))
        return _REGISTRY[name]
    raise WebSearchError(f"unknown web search {name!r}; use ddgs, off or static:PATH")
