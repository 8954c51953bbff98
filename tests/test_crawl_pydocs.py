"""Crawl a real website served from this machine: the Python documentation (Debian's
``python3.11-doc``) on 127.0.0.1. Skipped when the package is not installed."""

from __future__ import annotations

import functools
import json
import threading
from collections import Counter
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from kbqa.corpus.crawl import CrawlConfig, crawl

pytestmark = [pytest.mark.integration, pytest.mark.slow]
DOCS = Path("/usr/share/doc/python3.11/html")
PAGES = 300


@pytest.mark.skipif(not (DOCS / "index.html").is_file(), reason="python3.11-doc not installed")
def test_crawl_python_docs(tmp_path: Path) -> None:
    hits: Counter[str] = Counter()

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            hits[self.path] += 1
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(DOCS)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = f"http://127.0.0.1:{server.server_address[1]}/"
    out = tmp_path / "pydocs.jsonl"
    try:
        report = crawl(start, out, CrawlConfig(max_pages=PAGES, delay=0.0), progress=False)
    finally:
        server.shutdown()
    recs = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    print(f"{report.pages} pages, {report.pages / report.seconds:.1f} pages/s, "
          f"{report.bytes} bytes, skipped {dict(report.skipped)}")  # fmt: skip
    assert len(recs) == report.pages == PAGES
    urls = [r["final_url"] for r in recs]
    assert len(set(urls)) == len(urls)
    assert all(u.startswith(start) for u in urls), "never leaves the loopback host"
    del hits["/robots.txt"]
    assert max(hits.values()) == 1, "no URL fetched twice"
    assert all(r["text"].strip() and r["title"] for r in recs)
    # the precision strategy learns the recurring navigation/footer blocks from the crawl and
    # removes them; page content stays
    from kbqa.corpus.boilerplate import BoilerplateModel
    from kbqa.corpus.loaders import load_documents

    docs = list(load_documents(out))
    model = BoilerplateModel.fit(docs)
    learned = {block for _, block, _, _ in model.report(1000)}
    print("most widespread recurring blocks:", [row[1:3] for row in model.report(10)])
    assert {"Navigation", "Report a Bug", "Show Source", "This Page"} <= learned
    assert any(b.startswith("© Copyright") for b in learned)
    cleaned = {d.url: model.precision_clean(d) for d in docs}
    with_footer = [d for d in docs if "Report a Bug" in d.text.splitlines()]
    assert len(with_footer) > PAGES // 2
    assert not any("Report a Bug" in cleaned[d.url].splitlines() for d in with_footer)
    json_page = next(d for d in docs if d.url.endswith("/library/json.html"))
    assert "JSON (JavaScript Object Notation)" in cleaned[json_page.url]
    lines_before = sum(len(d.text.splitlines()) for d in with_footer)
    lines_after = sum(len(cleaned[d.url].splitlines()) for d in with_footer)
    print(f"precision removed {lines_before - lines_after} of {lines_before} lines")
    assert lines_before - lines_after >= 20 * len(with_footer)
