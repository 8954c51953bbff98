"""The chat page's server: one HTML page with no build step (``page.html``, plain JavaScript)
and a small JSON and server-sent-events API over the same graph ``kbqa chat`` runs.

Why not LangChain's Agent Chat UI: it is a Next.js application built with npm against the
LangGraph server API; ``langgraph dev`` serves that API, but the UI's build and its client
packages are more than a page kbqa can ship and test offline, and it shows messages, not an
answer with its sources, the sentence each came from and the reader's own answer. So kbqa serves
its own page (Starlette, the ASGI toolkit FastAPI is built on, run by uvicorn; the ``web``
extra), and its stream is :func:`kbqa.api.stream_events`, the decoder ``kbqa ask``, ``kbqa
chat`` and :meth:`kbqa.KBQA.stream` share.

Routes:

- ``GET /``: the page.
- ``POST /api/ask`` ``{"question": str, "thread": str | null}``, sent as ``application/json``
  from the page's own origin (any other ``Origin`` is refused, so a web page the user visits
  cannot ask through the server; a form's ``text/plain`` body, which needs no CORS preflight,
  gets a 415): a ``text/event-stream`` of
  ``node`` (``{"node", "line"}``), ``token`` (``{"node", "text"}``) and one ``answer`` event
  (:func:`answer_payload`), or one ``error`` event (``{"message"}``).
- ``GET /api/threads/{thread}``: the thread's turns (``[]`` for a new one), to resume it.
- ``GET /passage/{index}/{chunk_id}``: a cited chunk with the answer's sentence highlighted, the
  link of a source that has no URL of its own.

Questions are answered one at a time (one reader, one lock), each in a worker thread that runs
to the end even when the page goes away, so a client that disconnects never leaves the lock
held; a thread's history is read without the lock (the checkpointer serialises its own reads).
Threads persist in the same store as ``kbqa chat`` (``--db``, default
``~/.cache/kbqa/chat.sqlite``).
"""

from __future__ import annotations

import html
import json
import queue
import threading
import uuid
from collections.abc import Iterator
from importlib import resources
from typing import Any

from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.text import lone_surrogate

LOOPBACK = "127.0.0.1"
ALLOWED_HOSTS = (LOOPBACK, "localhost")
"""The ``Host`` names the server answers (Starlette's ``TrustedHostMiddleware``): a page of
another site that rebinds its own name to 127.0.0.1 (DNS rebinding) gets a 400, not a thread's
history (a break-it trial)."""
MAX_BODY_BYTES = 64 * 1024
"""The largest ``/api/ask`` body accepted (a question is a sentence)."""
INSTALL_HINT = "bash scripts/setup.sh web, or pip install 'kbqa[web]' (starlette, uvicorn)"


def answer_payload(out: dict[str, Any], sentence_of: Any) -> dict[str, Any]:
    """What the page shows for one answer: the answer, whether it abstained and why, the
    reader's own answer when a later stage replaced it (or the extractor's span when the
    reader's was kept over it), the question as understood (a follow-up), and the sources,
    each with the sentence the answer came from and a link.

    Args:
        out: The graph's output (:class:`~kbqa.state.OutputState`).
        sentence_of: ``source -> str``: the sentence of a cited chunk that holds the answer.
    """
    from kbqa.answers.explain import abstention_reason, extractor_note, reader_note

    sources = []
    for src in out.get("sources", []):
        index = out.get("context_index") or "main"
        sources.append(
            {
                "title": src.get("title") or src.get("doc_id", ""),
                "doc_id": src.get("doc_id", ""),
                "url": web_url(src.get("url")) or f"/passage/{index}/{src.get('chunk_id', -1)}",
                "sentence": sentence_of(src),
            }
        )
    return {
        "answer": str(out.get("answer", "")),
        "abstained": bool(out.get("abstained")),
        "why": abstention_reason(out),
        "reader_note": reader_note(out),
        "extractor_note": extractor_note(out),
        "understood_as": out.get("question") if out.get("asked") else None,
        "answered_by": out.get("answered_by", ""),
        "sources": sources,
    }


class ChatService:
    """The graph with a thread store, answering one question at a time.

    Args:
        ctx: The run's settings.
        db: The thread store (``kbqa chat --db``): a SQLite file, a ``postgresql://`` URL, or
            None for the default file.

    Raises:
        ValueError: The store cannot be opened (:func:`~kbqa.threads.sqlite.open_threads`).
    """

    def __init__(self, ctx: Context, db: str | None = None) -> None:
        from kbqa.graph import build_graph
        from kbqa.threads.sqlite import open_threads

        self.ctx = ctx
        self.store = open_threads(db)
        self.graph = build_graph(checkpointer=self.store.checkpointer)
        self.lock = threading.Lock()

    def config(self, thread: str) -> Any:
        """The LangGraph config of ``thread``."""
        return {"configurable": {"thread_id": thread}}

    def history(self, thread: str) -> list[dict[str, Any]]:
        """The thread's turns, oldest first (``[]`` for a thread never asked in)."""
        values = self.graph.get_state(self.config(thread)).values
        return list(values.get("history", [])) if values else []

    def ask(self, question: str, thread: str) -> Iterator[dict[str, Any]]:
        """Events for the page (see the module docstring), the last an ``answer`` or ``error``.

        The graph runs in a worker thread under the service's lock and always runs to its end;
        this generator only relays its events, so closing it early (a client gone) releases
        nothing it holds.
        """
        events: queue.Queue[dict[str, Any] | None] = queue.Queue()

        def work() -> None:
            try:
                for event in self._run(question, thread):
                    events.put(event)
            except Exception as exc:  # a fault of the run: the page gets it as one event
                events.put({"event": "error", "message": f"{type(exc).__name__}: {exc}"})
            finally:
                events.put(None)

        threading.Thread(target=work, name=f"kbqa-serve-{thread}", daemon=True).start()
        while (event := events.get()) is not None:
            yield event

    def _run(self, question: str, thread: str) -> Iterator[dict[str, Any]]:
        from kbqa.api import stream_events
        from kbqa.errors import KBQAError

        with self.lock:
            try:
                for event in stream_events(self.graph, question, self.config(thread), self.ctx):
                    if event.kind == "token":
                        yield {"event": "token", "node": event.node, "text": event.text}
                    elif event.kind == "node":
                        route = [
                            r
                            for r in event.update.get("route", [])[1:]
                            if isinstance(r, str) and ":" in r
                        ]
                        yield {
                            "event": "node",
                            "node": event.node,
                            "line": " ".join(route) or event.node,
                        }
                    elif event.answer is not None:
                        out = event.answer.output
                        payload = answer_payload(out, lambda src, out=out: self.sentence(out, src))
                        yield {"event": "answer", "thread": thread, **payload}
            except (KBQAError, ValueError) as exc:
                yield {"event": "error", "message": str(exc)}

    def sentence(self, out: dict[str, Any], src: dict[str, Any]) -> str:
        """The sentence of a cited chunk that holds the answer ("" when none, or abstained)."""
        from kbqa.answers.extract import sentences
        from kbqa.answers.snap import grounded

        chunk = self.chunk(out.get("context_index") or "main", int(src.get("chunk_id", -1)))
        text = chunk.text if chunk is not None else ""
        if out.get("abstained") or not text:
            return ""
        answer = str(out.get("answer", ""))
        return next((s.strip() for s in sentences(text) if grounded(answer, [s])), "")

    def chunk(self, index: str, chunk_id: int) -> Chunk | None:
        """Chunk ``chunk_id`` of the run's index (``main``) or its ``precision`` sub-index
        (None when there is no such chunk)."""
        from kbqa.errors import KBQAError
        from kbqa.resources import retriever_for

        try:
            chunks = retriever_for(self.ctx, None if index == "main" else index).chunks
        except KBQAError:  # an index without that sub-index
            return None
        return chunks[chunk_id] if 0 <= chunk_id < len(chunks) else None


def web_url(url: object) -> str:
    """``url`` when it is an ``http(s)`` address, else "": a knowledge base's ``javascript:`` or
    ``data:`` URL is shown as text, never made a link the page would follow."""
    text = str(url or "").strip()
    return text if text.lower().startswith(("http://", "https://")) else ""


def refusal(request: Any) -> tuple[str, int] | None:
    """Why ``POST /api/ask`` refuses ``request`` before reading it, with the status, or None.

    - 415 unless the body is declared ``application/json``: a page of another site can send a
      ``text/plain`` POST without a CORS preflight, and the server would run its question;
    - 403 when an ``Origin`` is sent and is not the server's own: ``http://``, one of
      :data:`ALLOWED_HOSTS` and the port of the ``Host`` the request came to (a page opened as
      ``localhost`` may ask the server reached as ``127.0.0.1``; a browser names the page that
      sent the request there).
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        return f"send the question as application/json, not {kind or 'no content type'}", 415
    origin = request.headers.get("origin")
    if origin is not None and not own_origin(origin, request.headers.get("host", "")):
        return f"a request from another origin ({origin}) is refused", 403
    return None


def own_origin(origin: str, host: str) -> bool:
    """Is ``origin`` (an ``Origin`` header) the server's own page, reached at ``host`` (the
    ``Host`` header, ``name[:port]``)? Both name a loopback name of :data:`ALLOWED_HOSTS` on the
    same port (80 when none is written), and the origin is serialised as browsers send it
    (``http://name[:port]``, nothing else: no user, path, query or fragment); anything
    unparsable is not."""
    from urllib.parse import urlsplit

    try:
        sent, came = urlsplit(origin), urlsplit(f"http://{host}")
        ports = (sent.port or 80, came.port or 80)
    except ValueError:  # a port out of range or not a number
        return False
    canonical = f"http://{sent.hostname}" + (f":{sent.port}" if sent.port is not None else "")
    return (
        origin == canonical
        and sent.hostname in ALLOWED_HOSTS
        and came.hostname in ALLOWED_HOSTS
        and ports[0] == ports[1]
    )


def create_app(service: ChatService) -> Any:
    """The Starlette application serving ``service`` (routes in the module docstring).

    Raises:
        ModelError: Starlette is not installed.
    """
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.middleware.trustedhost import TrustedHostMiddleware
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, JSONResponse, StreamingResponse
        from starlette.routing import Route
    except ImportError:
        from kbqa.errors import ModelError

        raise ModelError(f"kbqa serve needs Starlette and uvicorn: {INSTALL_HINT}") from None
    page = resources.files("kbqa.serve").joinpath("page.html").read_text(encoding="utf-8")

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    async def ask(request: Request) -> Any:
        refused = refusal(request)
        if refused is not None:
            return JSONResponse({"error": refused[0]}, refused[1])
        too_big = JSONResponse({"error": f"the request is over {MAX_BODY_BYTES} bytes"}, 413)
        length = request.headers.get("content-length", "")
        if length.isdigit() and int(length) > MAX_BODY_BYTES:
            return too_big  # refused before reading: a huge body never reaches memory
        raw = b""
        async for part in request.stream():  # a body without a length is read up to the cap
            raw += part
            if len(raw) > MAX_BODY_BYTES:
                return too_big
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            return JSONResponse({"error": f"the body is not JSON: {problem}"}, 400)
        question = body.get("question") if isinstance(body, dict) else None
        thread = body.get("thread") if isinstance(body, dict) else None
        if not isinstance(question, str) or not question.strip():
            return JSONResponse({"error": "question is empty: ask a non-empty question"}, 400)
        if thread is not None and (not isinstance(thread, str) or not thread.strip()):
            return JSONResponse({"error": "thread must be a non-empty string or null"}, 400)
        for name, value in (("question", question), ("thread", thread or "")):
            if lone_surrogate(value):  # valid JSON, not text
                return JSONResponse({"error": f"{name} holds half of a surrogate pair"}, 400)
        thread = thread or uuid.uuid4().hex[:12]

        def stream() -> Iterator[str]:
            for event in service.ask(question, thread):
                kind = event.pop("event")
                yield f"event: {kind}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"

        return StreamingResponse(
            stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"}
        )

    # plain functions: Starlette runs them in its thread pool, off the event loop
    def history(request: Request) -> JSONResponse:
        return JSONResponse(service.history(request.path_params["thread"]))

    def passage(request: Request) -> HTMLResponse:
        index, chunk_id = request.path_params["index"], request.path_params["chunk_id"]
        chunk = service.chunk(index, chunk_id) if index in ("main", "precision") else None
        if chunk is None or not chunk.text:
            return HTMLResponse("<p>no such passage</p>", 404)
        mark = request.query_params.get("mark", "")
        before, found, after = chunk.text.partition(mark) if mark else (chunk.text, "", "")
        shown = html.escape(before) + (f"<mark>{html.escape(found)}</mark>" if found else "")
        shown += html.escape(after)  # marked in the text itself, never inside an entity
        title = html.escape(chunk.title or f"passage {chunk_id}")
        url = html.escape(chunk.url)
        link = f"<a href='{url}'>{url}</a>" if web_url(chunk.url) else url  # no javascript:
        return HTMLResponse(
            f"<!doctype html><meta charset='utf-8'><title>{title}</title>"
            "<body style='font-family:sans-serif;max-width:50em;margin:2em auto'>"
            f"<h1>{title}</h1>{f'<p>{link}</p>' if url else ''}"
            f"<p style='white-space:pre-wrap'>{shown}</p></body>"
        )

    return Starlette(
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(ALLOWED_HOSTS))],
        routes=[
            Route("/", index),
            Route("/api/ask", ask, methods=["POST"]),
            Route("/api/threads/{thread:path}", history),  # a thread id may hold "/"
            Route("/passage/{index}/{chunk_id:int}", passage),
        ],
    )
