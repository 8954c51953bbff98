"""The checks of :class:`~kbqa.context.Context`'s settings, as tables: :data:`FIELD_CHECKS`
(one per field, after the type its annotation implies: :func:`type_problem`) and
:data:`RULES` (settings together); and :class:`Resources`, the parts a run may be handed as
objects, with the check of each. Nothing here reads a file: ``Context.check_paths`` does."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbqa.embedders.bge import BGE_RERANKER
from kbqa.llm.grounding import GROUNDING_MODES
from kbqa.llm.lora import SHIPPED_RERANKERS
from kbqa.retrieval.rerank import RERANKERS

MAX_RETRIES = 3
"""Upper bound of ``max_retries``: keeps the longest route (classify, retrieve, then
generate/check_abstention/retry per attempt, cross_check, verify, fallback, web_search,
finalize) at 18 node runs, well below LangGraph's recursion limit of 25."""


MAX_N_CTX = 262_144
"""Largest context window accepted (tokens): above what the supported models were trained for,
and a llama.cpp context that size already needs gigabytes of memory."""


def type_problem(name: str, annotation: Any, value: Any) -> str | None:
    """What is wrong with ``value`` for a field annotated ``annotation`` (a bool, a string or a
    number where the annotation says so; the annotations are strings under
    ``from __future__ import annotations``), or None."""
    if annotation in ("bool", bool) and not isinstance(value, bool):
        return f"{name} must be true or false, got {value!r}"
    if annotation in ("str", str) and not isinstance(value, str):
        return f"{name} must be a string, got {value!r}"
    number = annotation in ("float", float) or (annotation == "float | None" and value is not None)
    if number and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return f"{name} must be a number, got {value!r}"
    if number and not math.isfinite(value):
        return f"{name} must be a finite number, got {value!r}"
    return None


def _positive(value: Any) -> str | None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return f"must be a positive integer, got {value!r}"
    return None


def _whole(most: int | None = None) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return f"must be a whole number >= 0, got {value!r}"
        if most is not None and value > most:
            return f"must be between 0 and {most}, got {value!r}"
        return None

    return check


def _within(
    low: float, high: float, *, open_low: bool = False, unit: str = ""
) -> Callable[[Any], str | None]:
    shown = f"{'(' if open_low else '['}{low:g}, {high:g}]{unit}"

    def check(value: Any) -> str | None:
        if value is None:
            return None
        inside = (low < value if open_low else low <= value) and value <= high
        return None if inside else f"must be in {shown}, got {value!r}"

    return check


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in choices else f"must be one of {', '.join(choices)}, got {value!r}"

    return check


CROSS_CHECK_RULES = ("abstain", "extractor", "wider-span", "answer", "date")
"""The cross-check's rules by name (``Context.cross_check_rules`` names some), in the order of
:mod:`kbqa.answers.cross_check`'s docstring: ``abstain`` (rule 1), ``extractor`` (rule 2, a
disagreeing answer replaced by the extractor's span), ``wider-span`` (rule 2, an agreeing
answer replaced where :func:`kbqa.answers.cross_check.prefer_extractor` says so), ``answer``
(rule 3) and ``date`` (rule 4, a date question answered without a digit).
:func:`kbqa.answers.cross_check.decide` applies the ones it is given;
``benchmarks/cross_check.py --ablate`` replays a run with each one left out, which is how a rule
is re-chosen for a new reader. Defined here, with the settings, so that they can check it."""


def parse_rules(text: str) -> tuple[str, ...]:
    """The rules named by ``text`` (``Context.cross_check_rules``): comma-separated names of
    :data:`CROSS_CHECK_RULES`, ``all`` for every one, or ``none``; in that tuple's order. Case
    and blanks inside a name do not matter (``Wider Span`` is ``wider-span``).

    Raises:
        ValueError: A name is not a rule, or ``text`` names none (say ``none``).
    """
    names = [" ".join(n.split()).lower().replace(" ", "-") for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return CROSS_CHECK_RULES
    if names == ["none"]:
        return ()
    if not names or any(n not in CROSS_CHECK_RULES for n in names):
        raise ValueError(
            f"must be comma-separated rules of {', '.join(CROSS_CHECK_RULES)}, or all, or none; "
            f"got {text if len(text) <= 80 else text[:77] + '...'!r}"
        )
    return tuple(r for r in CROSS_CHECK_RULES if r in names)


def _cross_check_rules(value: Any) -> str | None:
    try:
        parse_rules(value)
    except ValueError as exc:
        return str(exc)
    return None


def _not_blank(value: Any) -> str | None:
    return None if value.strip() else "must not be empty: it is the answer of an abstention"


def _web_search_name(value: Any) -> str | None:
    from kbqa.web_search import known_web_search

    if value.startswith("static:") or known_web_search(value):
        return None
    return (
        "($KBQA_WEB_SEARCH, --web-search) must be ddgs, off, static:PATH of an existing "
        f"file, or a registered name; got {value!r}"
    )


def reranker_choices() -> str:
    """What ``reranker`` may be, as an error message lists it."""
    return (
        f"{', '.join(RERANKERS)}, {', '.join(SHIPPED_RERANKERS)} (shipped), hf:PATH_OR_NAME, "
        f"{BGE_RERANKER}[:FOLDER] or a directory from `kbqa finetune reranker`"
    )


def _reranker_name(value: Any) -> str | None:
    if value == "hf:":
        return "hf: needs a cross-encoder: hf:PATH_OR_NAME"
    if not value.strip():
        return f"must be one of {reranker_choices()}, got ''"
    return None


def is_reranker_dir_name(value: str) -> bool:
    """``value`` names a reranker directory, not a built-in or model name."""
    return value not in RERANKERS and not value.startswith(("hf:", BGE_RERANKER))


def _llm_url(value: Any) -> str | None:
    if not value:
        return None
    from kbqa.llm.endpoint import check_llm_url

    try:
        check_llm_url(value)
    except ValueError as exc:
        return str(exc)
    return None


FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    **dict.fromkeys(
        (
            "k",
            "retry_k",
            "candidate_pool",
            "rerank_pool",
            "max_answer_tokens",
            "max_answer_chars",
            "max_verify_tokens",
            "web_max_results",
        ),
        _positive,
    ),
    "n_ctx": lambda v: (
        _positive(v) or (None if v <= MAX_N_CTX else f"must be at most {MAX_N_CTX} tokens, got {v}")
    ),
    "n_threads": _whole(),
    "rerank_add": _whole(),
    "max_retries": _whole(MAX_RETRIES),
    "abstention_phrase": _not_blank,
    "abstention_phrase_en": _not_blank,
    "web_search": _web_search_name,
    "llm_timeout": _within(0, 3600, open_low=True, unit=" seconds"),
    "web_timeout": _within(0, 60, open_low=True, unit=" seconds"),
    "abstention_threshold": _within(0, 1),
    "stop_reading_below": _within(0, 1),
    "rerank_weight": _within(0, 1),
    "reranker": _reranker_name,
    "cross_check": lambda v: (
        None if v in ("auto", "on", "off") else (f"must be auto, on or off, got {v!r}")
    ),
    "cross_check_rules": _cross_check_rules,
    "grounding": _one_of(*GROUNDING_MODES),
    "reading": _one_of("joint", "each"),
    "fusion": _one_of("weighted", "rrf"),
    "llm_url": _llm_url,
}
"""Each field's own check (after its type's, from its annotation): a problem, or None."""


def _fusion_weights(c: Any) -> str | None:
    if c.bm25_weight < 0 or c.dense_weight < 0 or c.bm25_weight + c.dense_weight <= 0:
        return (
            f"fusion weights must be >= 0 and not both 0, got bm25_weight={c.bm25_weight}, "
            f"dense_weight={c.dense_weight}"
        )
    return None


def _rerank_pool(c: Any) -> str | None:
    if c.reranker != "off" and c.rerank_pool < c.k + c.rerank_add:
        return (
            f"rerank_pool ({c.rerank_pool}) must be at least k + rerank_add "
            f"({c.k} + {c.rerank_add}): the reranker keeps the best k of the pool it sees, or "
            "adds rerank_add chunks to the fused top k"
        )
    return None


def _retriever_problem(r: Any) -> str | None:
    if callable(getattr(r, "retrieve", None)) and all(hasattr(r, n) for n in ("chunks", "mode")):
        return None
    return (
        "a retriever object (retrieve(), chunks, mode: the "
        "kbqa.retrieval.retriever.Retriever protocol)"
    )


def _retriever_object(c: Any) -> str | None:
    if c.retriever is None or not (wanted := _retriever_problem(c.retriever)):
        return None
    return f"retriever must be {wanted}, got {c.retriever!r}"


def _resources_object(c: Any) -> str | None:
    if c.resources is None:
        return None
    if not isinstance(c.resources, Resources):
        return f"resources must be a kbqa.resources.Resources, got {c.resources!r}"
    return c.resources.problem()


def _room_for_a_prompt(c: Any) -> str | None:
    if c.n_ctx < c.max_answer_tokens + 64:
        return (
            f"n_ctx ({c.n_ctx}) must be at least max_answer_tokens ({c.max_answer_tokens}) "
            "+ 64 to leave room for a prompt"
        )
    return None


def _english_reader(c: Any) -> str | None:
    if not (c.model_en or c.reader_adapter_en):
        return None
    if not c.use_llm:
        return (
            "an English reader (model_en / --model-en, reader_adapter_en / --reader-adapter-en) "
            "needs the LLM, but use_llm is off (--no-llm: the pattern extractor answers every "
            "question)"
        )
    if c.llm_url:
        return (
            "model_en and reader_adapter_en need the reader in this process: a llm_url server "
            "serves one model (give English questions a server of their own)"
        )
    if c.resources is not None and getattr(c.resources, "reader", None) is not None:
        return (
            "model_en and reader_adapter_en cannot go with a handed-in reader "
            "(resources.reader reads every question)"
        )
    return None


RULES: tuple[Callable[[Any], str | None], ...] = (
    _fusion_weights,
    _english_reader,
    _rerank_pool,
    _retriever_object,
    _resources_object,
    _room_for_a_prompt,
)
"""Checks of several settings together, run after :data:`FIELD_CHECKS`."""


@dataclass(frozen=True, slots=True)
class Resources:
    """Parts of a run handed in as objects rather than loaded from the settings: models built in
    Python, or a test's fakes. A part left None is loaded from the settings on first use.

    ``Context(resources=Resources(reader=model))`` reads with ``model``; with a ``web_search``
    given, the web-search stage still runs only when the settings switch it on.

    Attributes:
        retriever: The knowledge base's retriever (:class:`~kbqa.retrieval.retriever.Retriever`
            protocol; ``chunks`` numbered by chunk id).
        precision_retriever: The fallback's (``strategy="precision"``).
        reader: The reader's chat model (a LangChain ``BaseChatModel``).
        verifier: The verifier's chat model.
        reranker: The reranker of the fused pool (:class:`~kbqa.retrieval.rerank.Reranker`).
        web_search: The web search (:class:`~kbqa.web_search.WebSearch`).
    """

    retriever: Any = None
    precision_retriever: Any = None
    reader: Any = None
    verifier: Any = None
    reranker: Any = None
    web_search: Any = None

    def problem(self) -> str | None:
        """What is wrong with a part (an object that is not what it stands for), or None."""
        from langchain_core.language_models import BaseChatModel

        def chat(v: Any) -> str | None:
            return None if isinstance(v, BaseChatModel) else "a chat model"

        def has(method: str, what: str) -> Callable[[Any], str | None]:
            return lambda v: None if callable(getattr(v, method, None)) else what

        needs: dict[str, Callable[[Any], str | None]] = {
            "retriever": _retriever_problem,
            "precision_retriever": _retriever_problem,
            "reader": chat,
            "verifier": chat,
            "reranker": has("score", "a reranker (score(question, passages))"),
            "web_search": has("search", "a web search (search(query, max_results, timeout))"),
        }
        for name, check in needs.items():
            value = getattr(self, name)
            if value is not None and (wanted := check(value)):
                return f"resources.{name} must be {wanted}, got {value!r}"
        return None
