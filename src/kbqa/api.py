"""The Python API: ``KBQA.from_index(path).ask(question)`` and a typed :class:`Answer`.

A thin layer over the compiled graph (:data:`kbqa.graph.graph`) and its settings
(:class:`~kbqa.context.Context`): the same nodes, routes and outputs as ``kbqa ask``, with the
index and the reader loaded once when the object is made.

Example::

    from kbqa import KBQA

    qa = KBQA.from_index("index/bnwiki", k=3)
    answer = qa.ask("কোন জাদুঘরে সারগনিক বিজয় ফলক আছে?")
    print(answer.answer, answer.abstained, answer.sources[0].title, answer.route)

Threads: with a LangGraph checkpointer (``SqliteSaver``, or ``PostgresSaver`` from the
``postgres`` extra), each ``ask(question, thread_id=...)`` runs on that thread's state, so its
history grows and a follow-up is rewritten to stand alone, as in ``kbqa chat``::

    qa = KBQA.from_index("index/bnwiki", checkpointer=saver)
    qa.ask("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?", thread_id="t1")
    qa.ask("আর তিনি কোথায় জন্মগ্রহণ করেন?", thread_id="t1")
    qa.history("t1")  # the thread's turns, oldest first
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from langgraph.types import Checkpointer

from kbqa.context import Context
from kbqa.errors import IndexLoadError
from kbqa.stores.milvus.uri import is_milvus_uri, parse_store_uri

log = logging.getLogger("kbqa")


@dataclass(frozen=True, slots=True)
class Citation:
    """A passage an answer was read from.

    Attributes:
        doc_id: The document's id (a web result's URL).
        title: Its title.
        url: Its URL ("" when the knowledge base has none).
        chunk_id: The chunk's id in the index (-1 for a web result).
        score: The fused retrieval score (0 for a web result).
    """

    doc_id: str
    title: str
    url: str
    chunk_id: int
    score: float


@dataclass(frozen=True, slots=True)
class Answer:
    """One answered question.

    Attributes:
        question: The question as asked.
        answer: The short answer, or the abstention phrase of the question's language.
        abstained: True when the knowledge base did not yield an answer.
        sources: The passages the answer was read from, best first.
        route: The nodes that ran, in order, with their notes (``web: unavailable``, ...).
        answered_by: The stage that produced the answer (``generate``, ``retry``,
            ``cross_check``, ``verify``, ``fallback``, ``web_search``, ``extract``), or
            ``abstained``.
        timings: ``(node, seconds)`` per node run, in order.
        seconds: Wall time of the whole graph run.
        output: Everything the graph returned (:class:`kbqa.state.OutputState`).
    """

    question: str
    answer: str
    abstained: bool
    sources: list[Citation]
    route: list[str]
    answered_by: str
    timings: list[tuple[str, float]]
    seconds: float
    output: dict[str, Any] = field(repr=False)

    def __str__(self) -> str:
        return self.answer

    @property
    def why(self) -> str | None:
        """Why the question was abstained on, as ``kbqa ask`` prints it after ``why:``
        (:func:`kbqa.answers.explain.abstention_reason`); None for an answer, or when no reason
        is known."""
        from kbqa.answers.explain import abstention_reason

        return abstention_reason(self.output)

    @classmethod
    def from_output(cls, question: str, out: dict[str, Any], seconds: float) -> Answer:
        """Build from the graph's output dict."""
        return cls(
            question=question,
            answer=str(out.get("answer", "")),
            abstained=bool(out.get("abstained", True)),
            sources=[
                Citation(s["doc_id"], s["title"], s["url"], s["chunk_id"], s["score"])
                for s in out.get("sources", [])
            ],
            route=list(out.get("route", [])),
            answered_by=str(out.get("answered_by", "")),
            timings=[(t["node"], float(t["seconds"])) for t in out.get("timings", [])],
            seconds=seconds,
            output=dict(out),
        )


@dataclass(frozen=True, slots=True)
class Event:
    """One event of :meth:`KBQA.stream`.

    Attributes:
        kind: ``node`` (a node finished: ``node`` and its state ``update``), ``token`` (a piece
            of text a model generated: ``text``, from ``node``) or ``answer`` (the run is over:
            ``answer``).
        node: The node the event comes from ("" for ``answer``).
        text: The generated text piece (``token`` events).
        update: The node's state update (``node`` events).
        answer: The final answer (the ``answer`` event).
    """

    kind: Literal["node", "token", "answer"]
    node: str = ""
    text: str = ""
    update: dict[str, Any] = field(default_factory=dict, repr=False)
    answer: Answer | None = None


class KBQA:
    """Question answering over one index, with one set of settings.

    Args:
        context: The run's settings (:class:`~kbqa.context.Context`).
        load: Load the index, the reader and (when on) the verifier now, so that a bad path or
            model name fails here rather than at the first question.
        checkpointer: Keep threads (a LangGraph checkpointer): every question then names its
            ``thread_id``. None: every question starts fresh.

    Raises:
        TypeError: ``context`` is not a :class:`~kbqa.context.Context` (an index path: use
            :meth:`from_index`).
        ValueError: A file a setting names is missing: a ``static:PATH`` web search, a
            reranker directory (``load``; :meth:`~kbqa.context.Context.check_paths`).
        IndexLoadError: The index cannot be loaded (``load``).
        ModelError: An unknown model name or a bad adapter (``load``); a reader that cannot load
            (llama-cpp-python not installed, say) is a logged warning: the pattern extractor
            answers, as the graph routes it.
    """

    def __init__(
        self, context: Context, *, load: bool = True, checkpointer: Checkpointer = None
    ) -> None:
        from kbqa.graph import build_graph, graph

        if not isinstance(context, Context):
            raise TypeError(
                f"KBQA takes a kbqa.context.Context, got {type(context).__name__}; for an index "
                "directory use KBQA.from_index(path, **settings)"
            )
        self.context = context
        self.graph = graph if checkpointer is None else build_graph(checkpointer=checkpointer)
        self.threaded = checkpointer is not None
        self._warned = False
        if load:
            self._load()

    @classmethod
    def from_index(
        cls,
        path: str | Path,
        *,
        load: bool = True,
        checkpointer: Checkpointer = None,
        **settings: Any,
    ) -> KBQA:
        """Answer from the index at ``path`` (built by ``kbqa index``).

        Args:
            path: The index directory, or a Milvus store written by ``kbqa index --store``
                (``milvus://PATH.db`` or ``milvus://http://HOST:PORT``, optionally ``#NAME``).
            load: See :class:`KBQA`.
            checkpointer: See :class:`KBQA`.
            **settings: Any :class:`~kbqa.context.Context` field (``model``, ``k``,
                ``verify``, ``web_search``, ...).

        Raises:
            IndexLoadError: ``path`` is not an index; a malformed ``milvus://`` URI; with
                ``load``, a store that does not exist or lacks the Milvus extra.
            ValueError: A setting is unknown or out of range (the message names it).
            TypeError: A setting is not a Context field.
        """
        if "index_dir" in settings:
            raise TypeError("index_dir is the path argument of from_index, not a setting")
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be an index directory (str or Path), got {path!r}")
        if is_milvus_uri(str(path)):  # a Milvus store (kbqa index --store milvus://...)
            try:
                parse_store_uri(str(path))
            except ValueError as exc:
                raise IndexLoadError(str(exc)) from None
        elif not Path(path).is_dir():
            raise IndexLoadError(f"index not found: {path} (build one with kbqa index)")
        unknown = sorted(set(settings) - set(Context.field_names()) - {"retriever"})
        if unknown:
            raise TypeError(
                f"unknown setting(s) {', '.join(unknown)}; a KBQA takes the fields of "
                "kbqa.context.Context"
            )
        return cls(Context(index_dir=str(path), **settings), load=load, checkpointer=checkpointer)

    def _load(self) -> None:
        from kbqa.resources import preload

        problem = preload(self.context)
        if problem:
            log.warning("LLM unavailable (%s); answering with the pattern extractor", problem)

    def ask(self, question: str, *, thread_id: str | None = None) -> Answer:
        """Answer one question (in thread ``thread_id``, with a checkpointer).

        Raises:
            TypeError: ``question`` is not a string.
            ValueError: An empty question; a ``thread_id`` missing with a checkpointer, or given
                without one.
            KBQAError: The index or model failed (a broken index file, say).
        """
        self._check(question)
        config = self._config(thread_id)
        started = time.perf_counter()
        out = self.graph.invoke({"question": question}, config, context=self.context)
        self._warn(out)
        return Answer.from_output(question, dict(out), time.perf_counter() - started)

    def batch(self, questions: Iterable[str], *, thread_id: str | None = None) -> list[Answer]:
        """Answer several questions, one after another (the llama.cpp reader runs one
        generation at a time; with ``thread_id``, as turns of that thread). Every question is
        checked before the first is answered.

        Raises:
            TypeError: ``questions`` is one string (not a list of them), or holds a non-string.
            ValueError: One of them is empty (the message gives its position); ``thread_id`` as
                in :meth:`ask`.
        """
        if isinstance(questions, (str, bytes)):
            raise TypeError("batch takes a list of questions, not one string: use ask()")
        asked = list(questions)
        for i, q in enumerate(asked):
            try:
                self._check(q)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"question {i}: {exc}") from None
        self._config(thread_id)
        return [self.ask(q, thread_id=thread_id) for q in asked]

    def stream(self, question: str, *, thread_id: str | None = None) -> Iterator[Event]:
        """Answer one question (in thread ``thread_id``, as :meth:`ask`), yielding ``node``
        events as nodes finish, ``token`` events as the reader (or the verifier) generates,
        then one ``answer`` event.

        Raises:
            TypeError, ValueError: As :meth:`ask`, at the call (before iterating).
        """
        self._check(question)
        return self._stream(question, self._config(thread_id))

    def history(self, thread_id: str) -> list[dict[str, Any]]:
        """The turns of thread ``thread_id``, oldest first (``question``, ``answer``, ...; empty
        for a thread with none).

        Raises:
            ValueError: This KBQA has no checkpointer.
        """
        values = self.graph.get_state(self._config(thread_id)).values
        return [dict(turn) for turn in values.get("history", [])]

    def _config(self, thread_id: str | None) -> Any:
        """The run config of ``thread_id``.

        Raises:
            ValueError: ``thread_id`` missing with a checkpointer, or given without one.
        """
        if not self.threaded:
            if thread_id is not None:
                raise ValueError(
                    f"thread_id={thread_id!r} needs a checkpointer: "
                    "KBQA.from_index(path, checkpointer=...)"
                )
            return None
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError(
                "this KBQA keeps threads (it has a checkpointer): give each question a "
                f"thread_id (a non-empty string), got {thread_id!r}"
            )
        return {"configurable": {"thread_id": thread_id}}

    def _stream(self, question: str, config: Any) -> Iterator[Event]:
        for event in stream_events(self.graph, question, config, self.context):
            if event.answer is not None:
                self._warn(event.answer.output)
            yield event

    def _warn(self, out: Any) -> None:
        """Say once that the reader failed and the extractor answered (``load=False`` skips the
        check at construction)."""
        if out.get("llm_error") and not self._warned:
            self._warned = True
            log.warning(
                "LLM unavailable (%s); answering with the pattern extractor", out["llm_error"]
            )

    @staticmethod
    def _check(question: str) -> None:
        if not isinstance(question, str):
            raise TypeError(f"a question must be a string, got {type(question).__name__}")
        if not question.strip():
            raise ValueError("question is empty: ask a non-empty question")


STREAM_MODES: list[Any] = ["updates", "messages", "values"]
"""What :func:`stream_events` asks the graph for: each node's update, each model token, and the
state after each step (the last one is the output)."""


def stream_events(graph: Any, question: str, config: Any, context: Context) -> Iterator[Event]:
    """The one decoder of the graph's stream that every front door shares (:meth:`KBQA.stream`,
    ``kbqa ask``, ``kbqa chat``): LangGraph's ``(mode, chunk)`` pairs turned into
    :class:`Event` s, ``token`` and ``node`` events as they come and one ``answer`` event last.

    Args:
        graph: A compiled kbqa graph (:func:`kbqa.graph.build_graph`).
        question: The question as asked.
        config: The run's LangGraph config (a thread's ``{"configurable": {"thread_id":
            ...}}``), or None.
        context: The run's settings.

    Raises:
        ValueError, KBQAError: What the graph raises (an empty question, a bad index).
    """
    started = time.perf_counter()
    final: dict[str, Any] = {}
    parts: Iterator[Any] = graph.stream(
        {"question": question}, config, context=context, stream_mode=STREAM_MODES
    )
    for mode, chunk in parts:
        if mode == "messages":
            message, meta = chunk
            text = str(getattr(message, "content", ""))
            if text:
                yield Event("token", node=str(meta.get("langgraph_node", "")), text=text)
        elif mode == "updates":
            for node, update in chunk.items():
                yield Event("node", node=node, update=dict(update or {}))
        else:
            final = dict(chunk)
    yield Event("answer", answer=Answer.from_output(question, final, time.perf_counter() - started))
