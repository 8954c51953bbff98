"""LangSmith tracing against a stand-in server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from kbqa.tracing import tracing_enabled


class _Recorder(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, bytes]]] = []

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.received.append((self.command, self.path, body))
        payload = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = _reply

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def langsmith_stand_in() -> Iterator[tuple[str, list[tuple[str, str, bytes]]]]:
    received: ClassVar[list[tuple[str, str, bytes]]] = []
    handler = type("Handler", (_Recorder,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()


def test_ask_is_traced_with_node_names(
    tiny_index: Path, langsmith_stand_in: tuple[str, list[tuple[str, str, bytes]]]
) -> None:
    url, received = langsmith_stand_in
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "LANGSMITH_TRACING": "true",
        "LANGSMITH_API_KEY": "test-key",
        "LANGSMITH_ENDPOINT": url,
        "LANGSMITH_PROJECT": "kbqa-test",
    }
    cmd = [sys.executable, "-m", "kbqa.cli", "ask", "বাংলাদেশের রাজধানী কোথায়?", "--index",
           str(tiny_index), "--embedder", "fake/hash", "--model", "fake/script:ঢাকা"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "answer: ঢাকা" in out.stdout
    posted = b"".join(body for method, path, body in received if method in ("POST", "PATCH"))
    assert posted, f"nothing posted; requests: {[(m, p) for m, p, _ in received]}"
    for node in ("classify", "retrieve", "generate", "check_abstention", "finalize", "kbqa"):
        assert f'"name":"{node}"'.encode() in posted.replace(b" ", b""), node
    assert b"test-key" not in posted  # the key goes in a header, never in the payload


def test_tracing_needs_flag_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING",
                "LANGCHAIN_TRACING_V2"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    assert not tracing_enabled()
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    assert not tracing_enabled()
    monkeypatch.setenv("LANGSMITH_API_KEY", "k")
    assert tracing_enabled()
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    assert not tracing_enabled()
