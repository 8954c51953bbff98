"""Graph state: data only. Input, internal and output schemas as TypedDicts.

Everything an evaluator needs to explain an answer (retrieved chunk ids and scores, the chunks
given to the LLM, the route taken, retries, the node that produced the answer, time per node) is
in the graph's output, not only in traces.
"""

from __future__ import annotations

import copy
import functools
from typing import Annotated, Any, Required, get_origin, get_type_hints

from typing_extensions import TypedDict

RESET = "__reset__"
"""First element of a list update that replaces, rather than extends, an accumulated list."""


def extend(left: list[Any] | None, right: list[Any] | None) -> list[Any]:
    """Reducer of the accumulated lists (``route``, ``stage_answers``, ``timings``): append,
    except that an update starting with :data:`RESET` starts the list over (``classify`` does
    this, so a second question on the same thread, as in LangGraph Studio, starts clean)."""
    right = list(right or [])
    if right and right[0] == RESET:
        return right[1:]
    return list(left or []) + right


class InputState(TypedDict):
    """What a caller passes: ``{"question": "..."}``."""

    question: str


class RetrievedRecord(TypedDict):
    """One retrieved chunk as recorded in state."""

    chunk_id: int
    doc_id: str
    score: float
    rank: int
    is_padding: bool


class Source(TypedDict):
    """A passage cited for an answer."""

    doc_id: str
    title: str
    url: str
    chunk_id: int
    score: float


class StageAnswer(TypedDict):
    """The answer one answering stage produced, before later stages changed it."""

    stage: str
    answer: str
    abstained: bool


class PassageReading(TypedDict):
    """One reading of ``--reading each`` (generate): the reader's answer from one hit's window."""

    chunk_ids: list[int]
    """The window's chunks that fitted, in prompt order (padding first, then the hit)."""
    answer: str
    """The reading's answer, cleaned, or the abstention phrase."""
    abstained: bool
    abstention_probability: float | None
    """The reader's probability of beginning the abstention phrase (None: no threshold)."""


class WebResult(TypedDict):
    """One web search hit (what a :class:`~kbqa.web_search.WebSearch` returns, and what the
    state's ``web_results`` hold): page title, URL and the engine's snippet."""

    title: str
    url: str
    snippet: str


class Turn(TypedDict):
    """One answered question of a conversation thread (what a follow-up may refer to):
    ``question`` is the standalone question, ``asked`` the user's words when they differ."""

    question: str
    asked: str
    answer: str
    abstained: bool
    question_type: str
    title: str


class NodeTiming(TypedDict):
    """Wall time of one node run, in seconds."""

    node: str
    seconds: float


class OutputState(TypedDict, total=False):
    """What the graph returns.

    Attributes:
        question: The question as asked.
        answer: Final short answer, or the abstention phrase.
        abstained: True when the knowledge base did not yield an answer.
        sources: Passages the final answer was read from (hits, best first; web results
            have ``chunk_id`` -1 and their URL as ``doc_id``).
        route: Names of the nodes that ran, in order, plus ``fallback: unavailable``,
            ``web: unavailable`` or ``web: no results`` after a node that could not run.
        retries: How many times the retry node ran.
        answered_by: Node that produced the final answer: ``generate``, ``retry``,
            ``cross_check``, ``verify``, ``fallback``, ``web_search`` or ``extract``.
        language: ``bn`` or ``en`` (classify).
        question_type: person, date, number, location, email, list, yes/no or
            other (classify).
        retrieved: Chunks of the last retrieval, in prompt order, with fused scores.
        retrieval_mode: ``hybrid`` (BM25 and dense fused), ``bm25`` (an index without a dense
            part, ``--embedder none``) or ``bm25 (dense pending)`` (built BM25-first, its
            dense part not there yet: ``kbqa index --continue``), followed by
            `` + rerank (NAME)`` when a reranker ordered the pool (``lexical`` or the reranker
            directory's name).
        context_chunk_ids: Chunks that fitted the LLM's token budget, in prompt order, of the
            sub-index ``context_index`` names.
        context_index: Whose chunk ids ``context_chunk_ids`` are: ``""`` the primary index's,
            ``"precision"`` the precision sub-index's (set by fallback, which read those last).
        raw_answer: The answering stage's text before clean-up (the LLM's; the extractor's
            span when the cross-check replaced the reader's answer).
        reader_answer: The reader's own answer, cleaned, as ``check_abstention`` judged its
            last reading (``generate``, or ``retry``'s), or the abstention phrase when it
            abstained; kept when a later stage replaces the answer. "" when the reader did not
            read (no LLM, nothing retrieved, or it failed).
        abstention_probability: The reader's probability (0-1) of beginning the abstention
            phrase in its first reading, summed over every token that can begin it (any
            tokenisation, after any leading whitespace or punctuation) and over ending the
            reply before a word (an empty reply is an abstention too), which an abstention
            threshold compares (generate; :class:`~kbqa.llm.threshold.AbstentionThreshold`);
            ``None`` when no threshold decided it.
        abstention_threshold: The threshold it was compared with (generate).
        readings: Under ``--reading each``, the readings made, one a hit in retrieval order
            up to the first sure one (``stop_reading_below``; generate); the answer,
            ``context_chunk_ids`` and ``abstention_probability`` are the chosen one's. Empty
            when the reader read the hits jointly.
        stage_answers: Cleaned answer of every answering stage in order (``generate``,
            ``retry``, ...), so evaluations can attribute the final answer and count what each
            later stage changed.
        question_coverage: Share (0-1) of the question's content words held by the context's best
            sentence, as the cross-check measured it (cross_check); None when it did not run.
        extracted_answer: The pattern extractor's span on the context the reader read, the one
            the cross-check compared the reader's answer with, whether or not it was taken
            (cross_check); "" when it found none or did not run.
        verified_answer: What the verifier returned (verify).
        verify_changed: True when the verifier changed the answer (verify).
        fallback_answer: What the precision pipeline returned (fallback).
        web_query: The search query built from the question's key entities (web_search).
        web_results: Search hits ``{title, url, snippet}`` given to the LLM (web_search).
        web_error: Why the web search failed, when it did (web_search).
        llm_error: Why the generator failed at run time, when it did; the extractor answered
            instead (generate).
        timings: Seconds per node run.
        asked: The user's words when ``question`` is their standalone rewrite (a follow-up in a
            thread, :mod:`kbqa.answers.followup`); else "".
        history: The thread's earlier turns and this one (appended by finalize; kept across
            questions by a checkpointer, as ``kbqa chat`` runs the graph).
    """

    question: Required[str]
    answer: str
    abstained: bool
    sources: list[Source]
    route: Annotated[list[str], extend]
    retries: int
    answered_by: str
    language: str
    question_type: str
    retrieved: list[RetrievedRecord]
    retrieval_mode: str
    context_chunk_ids: list[int]
    context_index: str
    raw_answer: str
    reader_answer: str
    abstention_probability: float | None
    abstention_threshold: float | None
    readings: list[PassageReading]
    stage_answers: Annotated[list[StageAnswer], extend]
    question_coverage: float | None
    extracted_answer: str
    verified_answer: str
    verify_changed: bool
    fallback_answer: str
    web_query: str
    web_results: list[WebResult]
    web_error: str
    llm_error: str
    timings: Annotated[list[NodeTiming], extend]
    asked: str
    history: Annotated[list[Turn], extend]


class State(InputState, OutputState, total=False):
    """Internal state: the output fields (nodes keep no working values of their own)."""


KEPT_ACROSS_QUESTIONS = frozenset(
    {
        "question",
        "asked",
        "language",
        "question_type",
        "retries",
        "route",
        "timings",
        "stage_answers",
        "history",
    }
)
"""Output fields that :func:`per_question_reset` leaves alone: ``classify`` sets them for each
question itself (the accumulated lists with :data:`RESET`), and ``history`` is the thread's."""

_RESET_VALUES: dict[str, Any] = {"abstained": True}
"""Reset values other than the empty value of the field's type: a question nobody answered is
an abstention."""


def per_question_reset() -> dict[str, Any]:
    """The value each per-question output field starts from, for ``classify`` to clear the last
    question's fields in a thread: every field of :class:`OutputState` but
    :data:`KEPT_ACROSS_QUESTIONS`, with its type's empty value ("" for text, False, [] for a
    list, None for a number), so a field added to the output is cleared without a list to keep
    by hand. Fresh lists on each call."""
    return copy.deepcopy(_reset_values())


@functools.cache
def _reset_values() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, hint in get_type_hints(OutputState).items():
        if name in KEPT_ACROSS_QUESTIONS:
            continue
        if name in _RESET_VALUES:
            out[name] = _RESET_VALUES[name]
        elif hint is str:
            out[name] = ""
        elif hint is bool:
            out[name] = False
        elif get_origin(hint) is list:
            out[name] = []
        else:  # numbers, and anything that may be None
            out[name] = None
    return out
