"""``kbqa serve`` (issue 36 item 2): the chat page's API on a tiny index with a scripted reader,
through Starlette's test client (no port is opened): the page, the streamed events, the answer
with its sources and sentences, a follow-up in the same thread, resuming a thread, the passage
link, and bad input. The page itself in a real browser is tests/test_serve_browser.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from kbqa.context import Context
from kbqa.serve.app import ChatService, create_app, own_origin

LOCAL = "http://127.0.0.1"
"""The test client's address: the server answers its loopback names only (``ALLOWED_HOSTS``)."""


def events(response: Any) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of a server-sent-events body."""
    out = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


@pytest.fixture
def service(both_index: Path, tmp_path: Path, request: pytest.FixtureRequest) -> ChatService:
    script = f"fake/script:১৯১৩|কলকাতায়#{request.node.name}"  # a script of its own per test
    # reading joint: one scripted answer a question, and its tokens stream
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", cross_check="off",
                  model=script, web_search="off", reading="joint")  # fmt: skip
    return ChatService(ctx, str(tmp_path / "threads.sqlite"))


@pytest.fixture
def client(service: ChatService) -> TestClient:
    return TestClient(create_app(service), base_url=LOCAL)


def test_the_page_is_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/api/ask" in page.text and "<script>" in page.text


def test_an_answer_streams_with_its_progress_sources_and_thread(client: TestClient) -> None:
    response = client.post("/api/ask", json={"question": "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?"})
    assert response.headers["content-type"].startswith("text/event-stream")
    got = events(response)
    kinds = [k for k, _ in got]
    assert kinds[-1] == "answer" and "node" in kinds and "token" in kinds
    assert kinds.index("token") < kinds.index("answer")  # the reader's text before the answer
    nodes = [d["node"] for k, d in got if k == "node"]
    assert nodes[:3] == ["classify", "retrieve", "generate"] and nodes[-1] == "finalize"
    answer = got[-1][1]
    assert answer["answer"] == "১৯১৩" and not answer["abstained"] and answer["thread"]
    source = answer["sources"][0]
    assert source["title"] == "রবীন্দ্রনাথ ঠাকুর" and "১৯১৩" in source["sentence"]
    assert source["url"].startswith("/passage/main/")  # no URL of its own: the passage page
    passage = client.get(source["url"], params={"mark": source["sentence"]})
    assert passage.status_code == 200 and f"<mark>{source['sentence']}</mark>" in passage.text
    assert f"<h1>{source['title']}</h1>" in passage.text  # the page it is a passage of


def test_a_follow_up_in_the_thread_and_the_thread_resumed(client: TestClient) -> None:
    first = events(client.post("/api/ask", json={
        "question": "রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", "thread": "t1"}))  # fmt: skip
    assert first[-1][1]["thread"] == "t1"
    second = events(client.post("/api/ask", json={
        "question": "আর তিনি কোথায় জন্মগ্রহণ করেন?", "thread": "t1"}))  # fmt: skip
    answer = second[-1][1]
    assert answer["understood_as"] == "রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন?"
    assert answer["answer"] == "কলকাতায়"
    turns = client.get("/api/threads/t1").json()
    assert [t["answer"] for t in turns] == ["১৯১৩", "কলকাতায়"]
    assert turns[1]["asked"] == "আর তিনি কোথায় জন্মগ্রহণ করেন?"
    assert client.get("/api/threads/never-asked").json() == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [({"question": "  "}, "question is empty"), ({}, "question is empty"),
     ({"question": "ঢাকা?", "thread": 5}, "thread must be"), ("not json", "the body is not JSON"),
     ("{", "the body is not JSON"),
     ('{"question": "q?", "thread": "\\ud800"}', "thread holds half of a surrogate pair"),
     ('{"question": "\\udcff?"}', "question holds half of a surrogate pair")],
)  # fmt: skip
def test_bad_requests_are_refused_by_name(client: TestClient, body: Any, problem: str) -> None:
    if isinstance(body, str):  # malformed JSON was told "question is empty" (a break-it trial)
        response = client.post(
            "/api/ask", content=body, headers={"Content-Type": "application/json"}
        )
    else:
        response = client.post("/api/ask", json=body)
    assert response.status_code == 400 and problem in response.json()["error"]


def test_a_passage_that_is_not_there_is_a_404(client: TestClient) -> None:
    assert client.get("/passage/main/99999").status_code == 404
    assert client.get("/passage/other/0").status_code == 404


def test_a_client_gone_mid_answer_leaves_the_server_answering(
    both_index: Path, tmp_path: Path
) -> None:
    """A break-it trial: a client that closed its connection mid-answer left the lock held, and
    every later question hung."""
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", cross_check="off",
                  model="fake/slow:1", web_search="off")  # fmt: skip
    service = ChatService(ctx, str(tmp_path / "threads.sqlite"))
    client = TestClient(create_app(service), base_url=LOCAL)
    with client.stream("POST", "/api/ask", json={"question": "ঢাকা কোথায়?"}) as response:
        next(response.iter_lines())  # the first event, then the client goes away
    again = events(client.post("/api/ask", json={"question": "ঢাকা কোথায়?"}))
    assert again[-1][0] == "answer"


def test_a_thread_is_read_without_waiting_for_the_answer_being_generated(
    client: TestClient, service: ChatService
) -> None:
    """A break-it trial: reading a thread during an answer took the answer's lock on the
    event loop, and the whole server stopped."""
    events(client.post("/api/ask", json={"question": "ঢাকা কোথায়?", "thread": "busy"}))
    with service.lock:  # as while an answer is being generated
        turns = client.get("/api/threads/busy").json()
    assert len(turns) == 1


def test_hostile_bodies_and_missing_sub_indexes_are_client_errors(client: TestClient) -> None:
    nested = '{"question": ' + "[" * 30_000 + "]" * 30_000 + "}"  # under the size limit
    json_type = {"Content-Type": "application/json"}
    deep = client.post("/api/ask", content=nested, headers=json_type)
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["error"]
    huge = client.post("/api/ask", json={"question": "ঢাকা " * 40_000})
    assert huge.status_code == 413 and "bytes" in huge.json()["error"]
    assert client.get("/passage/precision/0").status_code in (200, 404)  # never a 500
    # a declared length over the limit is refused before the body is read (a break-it trial:
    # a 1 GB body was read whole, 737 MB -> 2.1 GB, before the 413)
    declared = client.post(
        "/api/ask", content=b"{}", headers={**json_type, "Content-Length": "10000000000"}
    )
    assert declared.status_code == 413


def test_requests_from_other_sites_are_refused(client: TestClient) -> None:
    """A break-it trial: a page of any web site could make the local server answer (a
    ``text/plain`` POST needs no CORS preflight) and, through DNS rebinding, read a thread."""
    question = json.dumps({"question": "ঢাকা কোথায়?"})
    plain = client.post("/api/ask", content=question, headers={"Content-Type": "text/plain"})
    assert plain.status_code == 415 and "application/json" in plain.json()["error"]
    foreign = client.post("/api/ask", json={"question": "ঢাকা কোথায়?"},
                          headers={"Origin": "http://evil.example"})  # fmt: skip
    assert foreign.status_code == 403 and "http://evil.example" in foreign.json()["error"]
    assert client.get("/api/threads/t1", headers={"Host": "evil.example:8791"}).status_code == 400
    # the page's own origin, and a client that sends none (curl, scripts), are answered
    own = client.post("/api/ask", json={"question": "ঢাকা কোথায়?"},
                      headers={"Origin": "http://127.0.0.1"})  # fmt: skip
    assert events(own)[-1][0] == "answer"
    assert events(client.post("/api/ask", json={"question": "ঢাকা কোথায়?"}))[-1][0] == "answer"


@pytest.mark.parametrize(
    ("origin", "host", "own"),
    [
        ("http://127.0.0.1:8791", "127.0.0.1:8791", True),
        ("http://localhost:8791", "127.0.0.1:8791", True),  # one machine, two loopback names
        ("http://127.0.0.1:8791", "localhost:8791", True),
        ("http://127.0.0.1", "127.0.0.1", True),
        ("http://127.0.0.1:9999", "127.0.0.1:8791", False),  # another server on this machine
        ("https://127.0.0.1:8791", "127.0.0.1:8791", False),
        ("http://evil.example:8791", "127.0.0.1:8791", False),
        ("http://user@127.0.0.1:8791", "127.0.0.1:8791", False),
        ("http://127.0.0.1:99999", "127.0.0.1:99999", False),  # no such port
        ("null", "127.0.0.1:8791", False),  # a sandboxed frame or a file: page
        ("http://localhost:8791", "evil.example:8791", False),  # a break-it trial's holes:
        ("http://localhost:8791?x=1", "localhost:8791", False),
        ("http://localhost:8791\n", "localhost:8791", False),
        ("http://localhost:08791", "localhost:8791", False),
        ("http://:pw@localhost:8791", "localhost:8791", False),
        ("http://localhost", "localhost:80", True),  # port 80 written or not
    ],
)
def test_own_origin(origin: str, host: str, own: bool) -> None:
    """A helper's finding: ``Origin: http://localhost:PORT`` was refused by a server reached as
    ``127.0.0.1:PORT``."""
    assert own_origin(origin, host) is own


def test_a_missing_precision_sub_index_is_a_404(tiny_index: Path, tmp_path: Path) -> None:
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", model="fake/abstain",
                  web_search="off")  # fmt: skip
    client = TestClient(create_app(ChatService(ctx, str(tmp_path / "t.sqlite"))), base_url=LOCAL)
    assert client.get("/passage/precision/0").status_code == 404
    assert client.get("/passage/main/0").status_code == 200


def test_a_thread_id_with_a_slash_can_be_resumed(client: TestClient) -> None:
    """A break-it trial: a thread asked in as ``a/b`` could never be read back."""
    events(client.post("/api/ask", json={"question": "ঢাকা কোথায়?", "thread": "a/b"}))
    assert len(client.get("/api/threads/a%2Fb").json()) == 1
    assert client.get("/api/threads/a").json() == []


def test_a_knowledge_base_url_that_is_not_a_web_address_is_never_a_link(tmp_path: Path) -> None:
    """A break-it trial: a document's ``javascript:`` URL became a clickable link on the
    passage page and in the chat page's sources; and ``mark=amp`` marked the inside of the
    entity ``&amp;``."""
    from kbqa.corpus.document import Document
    from kbqa.embedders import HashEmbedder
    from kbqa.index import build_index

    docs = [
        Document("x", "Rome", "Rome is the capital of Italy. Tom & Jerry.", "javascript:alert(1)"),
        Document("y", "Lyon", "Lyon lies on the Rhone.", "https://example.org/Lyon"),
    ]
    build_index(docs, tmp_path / "idx", HashEmbedder(), progress=False)
    ctx = Context(index_dir=str(tmp_path / "idx"), embedder="fake/hash", cross_check="off",
                  model="fake/script:Rome", web_search="off")  # fmt: skip
    client = TestClient(create_app(ChatService(ctx, str(tmp_path / "t.sqlite"))), base_url=LOCAL)
    answer = events(client.post("/api/ask", json={"question": "What is the capital of Italy?"}))
    urls = [s["url"] for s in answer[-1][1]["sources"]]
    assert not any(u.startswith("javascript:") for u in urls)
    assert "https://example.org/Lyon" in urls or len(urls) == 1
    rome = client.get("/passage/main/0", params={"mark": "amp"}).text
    assert "href='javascript" not in rome and "javascript:alert(1)" in rome  # shown as text
    assert "<mark>" not in rome  # "amp" is not in the text; only in its escaped form
    assert "<mark>&amp;</mark>" in client.get("/passage/main/0", params={"mark": "&"}).text
    lyon = client.get("/passage/main/1").text
    assert "<a href='https://example.org/Lyon'>" in lyon
