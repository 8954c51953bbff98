"""The BFS crawler against a small website served on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx
import pytest

from kbqa.corpus.crawl import CrawlConfig, crawl, normalize_url
from kbqa.corpus.html import decode_html
from kbqa.errors import InputError

TEXT = "This page has enough words to count as main text for the extractor. " * 6


def page(title: str, links: list[str], body: str = TEXT) -> str:
    anchors = "".join(f'<li><a href="{h}">{h}</a></li>' for h in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav><ul>{anchors}</ul></nav>"
        f"<article><h1>{title}</h1><p>{body}</p></article></body></html>"
    )


ROOT_LINKS = [
    "/a", "/a#section", "/a?utm_source=mail", "/b/", "mailto:x@example.org", "javascript:void(0)",
    "tel:+100", "http://other.example/x", "/doc.pdf", "/big", "/latin1", "/meta-cp1251",
    "/redir-off", "/redir-in", "/private/p", "/cal?d=0", "/missing", "/dir/", "/index.html",
]  # fmt: skip


class Site(BaseHTTPRequestHandler):
    hits: ClassVar[Counter[str]] = Counter()

    def _send(self, status: int, body: bytes, ctype: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.hits[self.path] += 1
        path = self.path
        if path == "/robots.txt":
            self._send(200, b"User-agent: *\nDisallow: /private\n", "text/plain")
        elif path == "/":
            self._send(200, page("Home", ROOT_LINKS).encode())
        elif path == "/dir":  # what http.server, Apache and nginx do for a folder
            self._send(301, b"", headers={"Location": "/dir/"})
        elif path == "/dir/":
            self._send(200, page("Folder", ["sub.html"]).encode())
        elif path == "/dir/sub.html":
            self._send(200, page("Folder page", []).encode())
        elif path == "/index.html":
            self._send(200, page("Home", ROOT_LINKS).encode())
        elif path in ("/a", "/b"):
            self._send(200, page(f"Page {path}", ["/", "/a", "/b/"]).encode())
        elif path == "/b/":
            self._send(301, b"", headers={"Location": "/b"})
        elif path == "/doc.pdf":
            self._send(200, b"%PDF-1.4 ...", "application/pdf")
        elif path == "/big":
            self._send(200, page("Big", [], "x " * 5_000_000).encode())  # a 10 MB page
        elif path == "/latin1":
            self._send(200, page("Latin", [], "Crème brûlée " * 30).encode("cp1252"),
                       "text/html; charset=windows-1252")  # fmt: skip
        elif path == "/meta-cp1251":
            html = page("Кириллица", [], "Привет мир, это страница " * 20).replace(
                "<head>", '<head><meta charset="windows-1251">'
            )
            self._send(200, html.encode("cp1251"), "text/html")
        elif path == "/redir-off":
            self._send(302, b"", headers={"Location": "http://other.example/"})
        elif path == "/redir-in":
            self._send(301, b"", headers={"Location": "/a"})
        elif path.startswith("/cal?d="):
            d = int(path.split("=")[1])
            self._send(200, page(f"Day {d}", [f"/cal?d={d + 1}"]).encode())
        else:
            self._send(404, b"not found", "text/plain")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[str, Counter[str]]]:
    hits: Counter[str] = Counter()
    handler = type("Handler", (Site,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", hits
    finally:
        server.shutdown()


FAST = CrawlConfig(max_pages=50, max_depth=3, delay=0.0, max_bytes=500_000, timeout=5)


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_crawl_stays_on_host_and_fetches_each_url_once(
    site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    start, hits = site
    out = tmp_path / "corpus.jsonl"
    report = crawl(start, out, FAST, progress=False)
    recs = records(out)
    urls = [r["final_url"] for r in recs]
    assert len(urls) == len(set(urls)) == report.pages
    assert all(u.startswith(start.rstrip("/")) for u in urls)
    assert {r["title"] for r in recs} >= {"Home", "Page /a", "Page /b", "Day 0", "Day 2"}
    assert max(hits.values()) == 1, hits  # no path requested twice (robots.txt included)
    assert "Day 3" not in {r["title"] for r in recs}, "the calendar trap stops at max_depth"
    assert report.skipped["not HTML (application/pdf)"] == 1
    assert report.skipped["larger than max_bytes"] == 1
    assert report.skipped["redirect off the allowed hosts"] == 1
    assert report.skipped["disallowed by robots.txt"] == 1
    assert report.skipped["HTTP 404"] == 1
    assert report.skipped["redirect to a page already seen"] == 1  # /redir-in -> /a
    assert report.skipped["same text as a page already saved"] == 1  # /index.html
    # a folder URL normalised without its slash, redirected back to it, is crawled, and its
    # relative links resolve against the slashed URL
    assert {"Folder", "Folder page"} <= {r["title"] for r in recs}
    assert any(r["final_url"].endswith("/dir/sub.html") for r in recs)
    assert "/private/p" not in hits and "http://other.example" not in str(hits)
    by_title = {r["title"]: r for r in recs}
    assert "Crème brûlée" in by_title["Latin"]["text"]
    assert "Привет мир" in by_title["Кириллица"]["text"]
    assert recs[0]["doc_id"] == recs[0]["final_url"] and recs[0]["depth"] == 0


def test_crawl_resumes_the_frontier(site: tuple[str, Counter[str]], tmp_path: Path) -> None:
    start, hits = site
    out = tmp_path / "corpus.jsonl"
    first = crawl(start, out, CrawlConfig(max_pages=3, delay=0.0), progress=False)
    assert first.pages == 3 and first.frontier_left > 0
    second = crawl(start, out, CrawlConfig(max_pages=6, delay=0.0), progress=False)
    assert second.resumed_pages == 3 and second.pages == 3
    urls = [r["final_url"] for r in records(out)]
    assert len(urls) == len(set(urls)) == 6
    del hits["/robots.txt"]  # read again by the second run
    assert max(hits.values()) == 1


def test_crawl_refuses_a_foreign_output(site: tuple[str, Counter[str]], tmp_path: Path) -> None:
    start, _ = site
    out = tmp_path / "corpus.jsonl"
    out.write_text('{"doc_id": "mine"}\n')
    with pytest.raises(InputError, match="has no crawl state"):
        crawl(start, out, FAST, progress=False)
    assert out.read_text() == '{"doc_id": "mine"}\n'


def test_start_url_that_does_not_answer(tmp_path: Path) -> None:
    out = tmp_path / "corpus.jsonl"
    with pytest.raises(InputError, match=r"no page saved .*network error"):
        crawl("http://127.0.0.1:9/", out, CrawlConfig(timeout=2, delay=0), progress=False)
    assert not out.exists() and not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM:80/a/b/?utm_source=x&id=3#frag", "http://example.com/a/b/?id=3"),
        ("http://example.com/a/b/", "http://example.com/a/b"),
        ("https://example.com:443/", "https://example.com/"),
        ("mailto:x@example.org", None),
        ("javascript:void(0)", None),
        ("tel:+100", None),
        ("/rel/page#x", "http://h.org/rel/page"),
    ],
)
def test_normalize_url(url: str, expected: str | None) -> None:
    assert normalize_url(url, base="http://h.org/start") == expected


def test_bad_config() -> None:
    with pytest.raises(ValueError, match="max_pages must be > 0"):
        CrawlConfig(max_pages=0)
    with pytest.raises(InputError, match="not an http"):
        crawl("ftp://x.org/", "/tmp/never.jsonl", progress=False)


def test_crawl_command(site: tuple[str, Counter[str]], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from kbqa.cli import app

    start, _ = site
    out = tmp_path / "c.jsonl"
    res = CliRunner().invoke(app, ["crawl", start, "--out", str(out), "--max-pages", "4",
                                   "--delay", "0", "--max-bytes", "500000"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pages          4" in res.output and "pages/s" in res.output
    assert len(records(out)) == 4
    res = CliRunner().invoke(app, ["crawl", "not a url", "--out", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 2 and "not an http(s) URL" in res.output
    res = CliRunner().invoke(app, ["crawl", start, "--out", str(out), "--max-pages", "0"])
    assert res.exit_code == 2 and "max_pages must be > 0" in res.output


FRENCH = (
    "<p>La crème brûlée est un dessert français. Elle se prépare à partir d'œufs, de sucre et "
    "de crème; on la sert froide, avec une croûte de caramel. Où la goûter? À Paris, bien sûr, "
    "dans les brasseries près de l'Hôtel de Ville, où elle coûte très peu.</p>"
) * 3


@pytest.mark.parametrize(
    ("body", "header", "expected"),
    [
        ('<meta charset="x-unknown"><p>তিনি café</p>'.encode(), None, "তিনি café"),
        ("<p>তিনি café</p>".encode(), "no-such-codec", "তিনি café"),
        ('<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251"), None, "Привет"),
        # undeclared and not UTF-8: a statistical guess, so a page-sized French text
        (FRENCH.encode("cp1252"), None, "crème brûlée"),
        ("<p>café</p>".encode("cp1252"), "windows-1252", "café"),
        ("\ufeff<p>তিনি</p>".encode("utf-16-le"), None, "তিনি"),
    ],
)
def test_decode_html_sniffs_like_a_browser(body: bytes, header: str | None, expected: str) -> None:
    text = decode_html(body, header)
    assert expected in text and "\ufffd" not in text


def test_extract_full_keeps_navigation_main_drops_it(
    site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    start, _ = site
    texts = {}
    for mode in ("full", "main"):
        out = tmp_path / f"{mode}.jsonl"
        crawl(start, out, CrawlConfig(max_pages=2, max_depth=1, delay=0.0, extract=mode),
              progress=False)  # fmt: skip
        texts[mode] = records(out)[0]["text"]
    assert TEXT.strip() in texts["full"] and TEXT.strip()[:60] in texts["main"]
    assert "/redir-off" in texts["full"].splitlines()  # the nav list, one block per line
    assert "/redir-off" not in texts["main"]
    with pytest.raises(ValueError, match="extract must be one of full, main"):
        CrawlConfig(extract="everything")


def test_resume_after_a_kill_between_writing_a_page_and_saving_the_state(
    site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    start, _ = site
    out = tmp_path / "corpus.jsonl"
    crawl(start, out, CrawlConfig(max_pages=3, delay=0.0, concurrency=1), progress=False)
    state = json.loads((tmp_path / "corpus.jsonl.crawl-state.json").read_text())
    next_url = state["frontier"][0][0]
    # the page written, the state not yet saved, then a torn line from the kill
    extra = {"doc_id": next_url, "url": next_url, "final_url": next_url, "title": "x", "text": "x"}
    with out.open("a") as fh:
        fh.write(json.dumps(extra) + "\n" + '{"doc_id": "torn')
    crawl(start, out, CrawlConfig(max_pages=8, delay=0.0, concurrency=1), progress=False)
    urls = [r["final_url"] for r in records(out)]
    assert len(urls) == len(set(urls)) == 8


def test_pages_left_in_a_batch_at_max_pages_are_kept_for_later(
    site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    start, _ = site
    out = tmp_path / "corpus.jsonl"
    crawl(start, out, CrawlConfig(max_pages=2, delay=0.0, concurrency=4), progress=False)
    every = tmp_path / "every.jsonl"
    crawl(start, every, CrawlConfig(max_pages=100, delay=0.0, concurrency=4), progress=False)
    crawl(start, out, CrawlConfig(max_pages=100, delay=0.0, concurrency=4), progress=False)
    assert {r["final_url"] for r in records(out)} == {r["final_url"] for r in records(every)}


def test_a_damaged_or_mismatched_state_is_a_clear_error(
    site: tuple[str, Counter[str]], tmp_path: Path
) -> None:
    start, _ = site
    out = tmp_path / "corpus.jsonl"
    state = tmp_path / "corpus.jsonl.crawl-state.json"
    crawl(start, out, CrawlConfig(max_pages=3, delay=0.0), progress=False)
    out.write_text(out.read_text().splitlines(keepends=True)[0])
    with pytest.raises(InputError, match="holds 1 pages but its crawl state"):
        crawl(start, out, FAST, progress=False)
    state.write_text('{"start": "x"')
    with pytest.raises(InputError, match=r"crawl state .* is damaged"):
        crawl(start, out, FAST, progress=False)
    with pytest.raises(ValueError, match="delay must be"):
        CrawlConfig(delay=float("nan"))


def test_an_interrupted_crawl_keeps_its_pages_and_resumes(tmp_path: Path) -> None:
    import httpx

    served = Counter[str]()

    def handler(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        served[path] += 1
        if path == "/robots.txt":
            return httpx.Response(404)
        if path == "/p4" and served[path] == 1:
            raise KeyboardInterrupt  # Ctrl-C while this page is being fetched
        n = int(path[2:] or 0) if path.startswith("/p") else 0
        links = [f"/p{n + 1}", f"/p{n + 2}"]
        return httpx.Response(
            200, html=page(f"Page {n}", links), headers={"content-type": "text/html"}
        )

    def client() -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(handler), follow_redirects=False)

    out = tmp_path / "corpus.jsonl"
    cfg = CrawlConfig(max_pages=8, delay=0.0, concurrency=2)
    with pytest.raises(KeyboardInterrupt):
        crawl("http://site.test/", out, cfg, client=client(), progress=False)
    assert (tmp_path / "corpus.jsonl.crawl-state.json").is_file()
    before = len(records(out))
    crawl("http://site.test/", out, cfg, client=client(), progress=False)
    urls = [r["final_url"] for r in records(out)]
    assert before >= 1 and len(urls) == len(set(urls)) == 8


class Hostile(BaseHTTPRequestHandler):
    """Issue 15 items 7-8: a binary served as HTML, and robots.txt that drips or is huge."""

    robots: ClassVar[str] = "drip"

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            if self.robots == "drip":  # one byte every 0.2 s, for ever
                try:
                    while True:
                        self.wfile.write(b"#")
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    return
            rule = b"User-agent: *\nDisallow: /private\n"
            try:  # 50 MB of comments after the rule
                self.wfile.write(rule)
                for _ in range(50):
                    self.wfile.write(b"#" * 1_000_000 + b"\n")
            except OSError:
                return
            return
        if self.path == "/":
            body = page("Home", ["/binary.html", "/private/x", "/ok"]).encode()
        elif self.path == "/binary.html":
            body = b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 50
        else:
            body = page("OK", []).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("robots", ["drip", "huge"])
def test_hostile_robots_and_binaries_are_bounded(tmp_path: Path, robots: str) -> None:
    import resource

    handler = type("Handler", (Hostile,), {"robots": robots})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    cfg = CrawlConfig(max_pages=10, max_depth=2, delay=0.0, max_bytes=200_000, timeout=0.5)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.monotonic()
    start = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        if robots == "drip":  # a robots.txt that never arrives is unreachable: nothing is crawled
            with pytest.raises(InputError, match=r"robots\.txt unreachable: took too long"):
                crawl(start, tmp_path / "kb.jsonl", cfg, progress=False)
        else:
            report = crawl(start, tmp_path / "kb.jsonl", cfg, progress=False)
    finally:
        server.shutdown()
    # the drip is cut at PAGE_TIME_FACTOR x timeout (2 s), not waited on for ever
    assert time.monotonic() - started < 30
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
    assert grown_mib < 40  # the 50 MB robots.txt is read to 500 KiB only
    if robots == "drip":
        return
    saved = {r["url"].rsplit("/", 1)[-1] for r in records(tmp_path / "kb.jsonl")}
    assert "binary.html" not in saved and report.skipped["not HTML (binary content)"] == 1
    if robots == "huge":  # its first 500 KiB were parsed: the rule holds
        assert report.skipped["disallowed by robots.txt"] == 1 and "x" not in saved


def _robots_site(robots: Callable[[httpx.Request], httpx.Response]) -> Callable[[], httpx.Client]:
    """A two-page site (/ links /a and /private) whose robots.txt answers with ``robots``."""

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/robots.txt" or request.url.host != "site.test":
            return robots(request)
        links = ["/a", "/private"] if request.url.path == "/" else []
        return httpx.Response(200, html=page(f"Page {request.url.path}", links),
                              headers={"content-type": "text/html"})  # fmt: skip

    return lambda: httpx.Client(transport=httpx.MockTransport(handler), follow_redirects=False)


def _unreachable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


ROBOTS_CASES = {
    # RFC 9309, 2.3.1.4: a server error or no answer at all: nothing may be crawled
    "500": (lambda r: httpx.Response(500), 0, "unreachable (HTTP 500)"),
    "503": (lambda r: httpx.Response(503), 0, "unreachable (HTTP 503)"),
    "network error": (_unreachable, 0, "unreachable (ConnectError"),
    # 2.3.1.3: a 4xx means there are no rules
    "404": (lambda r: httpx.Response(404), 3, "HTTP 404, no rules"),
    "403": (lambda r: httpx.Response(403), 3, "HTTP 403, no rules"),
    # 2.3.1.2: redirects are followed, to another host too, and its rules hold
    "redirect to another host": (
        lambda r: (
            httpx.Response(301, headers={"location": "http://cdn.test/rules.txt"})
            if r.url.host == "site.test"
            else httpx.Response(200, text="User-agent: *\nDisallow: /private\n")
        ),
        2,
        "read (at http://cdn.test/rules.txt)",
    ),
    "endless redirects": (
        lambda r: httpx.Response(302, headers={"location": f"/robots.txt?{r.url.query.decode()}x"}),
        3,
        "more than 5 redirects",
    ),
}


@pytest.mark.parametrize("case", list(ROBOTS_CASES))
def test_robots_txt_answers_are_read_as_rfc_9309_says(
    case: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    robots, pages, logged = ROBOTS_CASES[case]
    out = tmp_path / "corpus.jsonl"
    cfg = CrawlConfig(max_pages=5, delay=0.0)
    with caplog.at_level("INFO", logger="kbqa"):
        if pages == 0:  # the start page itself is disallowed: the crawl says so
            with pytest.raises(InputError, match=r"mostly 'robots\.txt unreachable"):
                crawl("http://site.test/", out, cfg, client=_robots_site(robots)(), progress=False)
        else:
            report = crawl("http://site.test/", out, cfg, client=_robots_site(robots)(),
                           progress=False)  # fmt: skip
            assert report.pages == pages, report.skipped
    decisions = [r for r in caplog.records if "robots.txt of http://site.test" in r.getMessage()]
    assert len(decisions) == 1 and logged in decisions[0].getMessage()  # logged once
    warned = "--ignore-robots" in decisions[0].getMessage()
    assert decisions[0].levelname == ("WARNING" if pages == 0 else "INFO") and warned == (
        pages == 0
    )
    if case == "redirect to another host":
        assert report.skipped["disallowed by robots.txt"] == 1  # /private, by the moved rules
        assert "/private" not in {r["final_url"].rsplit("/", 1)[-1] for r in records(out)}
    ignored = crawl("http://site.test/", tmp_path / "all.jsonl",
                    CrawlConfig(max_pages=5, delay=0.0, respect_robots=False),
                    client=_robots_site(robots)(), progress=False)  # fmt: skip
    assert ignored.pages == 3
