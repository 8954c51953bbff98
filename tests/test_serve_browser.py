"""``kbqa serve`` in a real headless browser (issue 36 item 2): Chromium from Debian's packages,
driven by Playwright. Ask, see the answer and its sources, follow a source's link to the
passage with its sentence highlighted, ask a follow-up, and resume the thread in a new page.
The server is the real command (``kbqa serve --port 0``) on 127.0.0.1, over a tiny index with a
scripted reader, so the figures are deterministic; the integration tier, because it needs the
browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def serve(index: Path, tmp_path: Path, model: str) -> Iterator[str]:
    """``kbqa serve --port 0`` over ``index`` with ``model``; yields its URL."""
    pytest.importorskip("uvicorn")
    command = [sys.executable, "-m", "kbqa.cli", "serve", "--index", str(index),
               "--embedder", "fake/hash", "--model", model,
               "--cross-check", "off", "--web-search", "off", "--port", "0",
               "--reading", "joint",  # one scripted answer a question
               "--db", str(tmp_path / "threads.sqlite")]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = ""
        assert proc.stderr is not None
        for line in proc.stderr:
            found = re.search(r"kbqa serve: (http://127\.0\.0\.1:\d+/)", line)
            if found:
                url = found.group(1)
                break
        assert url, f"kbqa serve did not start (exit {proc.poll()})"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def served(both_index: Path, tmp_path: Path) -> Iterator[str]:
    yield from serve(both_index, tmp_path, "fake/script:১৯১৩|কলকাতায়")


def test_a_client_gone_mid_answer_does_not_hang_the_server(
    both_index: Path, tmp_path: Path
) -> None:
    """A break-it trial: a client that read a few bytes of an answer and closed its socket left
    the answer's lock held, and every later question hung."""
    import json
    import socket
    import urllib.request

    for url in serve(both_index, tmp_path, "fake/slow:2"):
        host, port = url.split("//")[1].rstrip("/").split(":")
        body = json.dumps({"question": "ঢাকা কোথায়?"}).encode()
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"POST /api/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)  # fmt: skip
            sock.recv(60)  # the first bytes of the answer, then the client goes away
        request = urllib.request.Request(f"{url}api/ask", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as response:
            assert b"event: answer" in response.read()


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt-get install chromium)")
def test_ask_see_sources_follow_a_link_and_resume_a_thread(served: str, tmp_path: Path) -> None:
    """The steps of issue 36 item 2, with a screenshot of each (PNG) in ``$KBQA_SCREENSHOTS``
    (``docs/screenshots`` holds the committed ones) or the test's temporary folder."""
    sync_api = pytest.importorskip("playwright.sync_api")
    shots = Path(os.environ.get("KBQA_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                     args=["--no-sandbox"])  # fmt: skip
        page = browser.new_page(viewport={"width": 1000, "height": 700})
        page.goto(served)
        page.fill("#question", "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?")
        page.click("button[type=submit]")
        answer = page.locator(".turn .answer").first
        answer.wait_for(timeout=60_000)
        assert answer.inner_text() == "১৯১৩"
        assert "done" in page.locator(".turn .progress").first.inner_text()
        source = page.locator(".sources a.source").first
        assert source.inner_text() == "রবীন্দ্রনাথ ঠাকুর"
        assert "১৯১৩" in page.locator(".sources .sentence mark").first.inner_text()
        page.screenshot(path=shots / "serve-answer.png", full_page=True)
        with page.context.expect_page() as opened:
            source.click()
        passage = opened.value
        passage.wait_for_load_state()
        assert "১৯১৩" in passage.locator("mark").inner_text()
        passage.screenshot(path=shots / "serve-passage.png")

        thread = page.locator("#thread").inner_text()
        assert thread and thread != "(new)" and f"thread={thread}" in page.url
        page.fill("#question", "আর তিনি কোথায় জন্মগ্রহণ করেন?")
        page.click("button[type=submit]")
        page.locator(".turn").nth(1).locator(".answer").wait_for(timeout=60_000)
        second = page.locator(".turn").nth(1)
        assert second.locator(".answer").inner_text() == "কলকাতায়"
        assert "রবীন্দ্রনাথ ঠাকুর কোথায়" in second.locator(".note").first.inner_text()
        page.screenshot(path=shots / "serve-follow-up.png", full_page=True)

        resumed = browser.new_page()
        resumed.goto(f"{served}#thread={thread}")
        resumed.locator(".turn").nth(1).wait_for(timeout=30_000)
        answers = resumed.locator(".turn .answer").all_inner_texts()
        assert answers == ["১৯১৩", "কলকাতায়"]
        browser.close()
    for name in ("serve-answer.png", "serve-passage.png", "serve-follow-up.png"):
        assert (shots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
