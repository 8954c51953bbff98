"""Run-time settings of the graph. LangGraph Studio shows these fields as editable settings."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from kbqa.embedders.bge import BGE_RERANKER
from kbqa.llm.grounding import DEFAULT_GROUNDING, GROUNDING_MODES
from kbqa.llm.models import DEFAULT_MODEL, MODELS
from kbqa.prompts import ABSTENTION_PHRASE, ABSTENTION_PHRASE_EN
from kbqa.retrieval.fusion import BM25_WEIGHT, DENSE_WEIGHT
from kbqa.retrieval.rerank import RERANK_POOL, RERANK_WEIGHT, RERANKERS

MAX_RETRIES = 3
"""Upper bound of ``max_retries``: keeps the longest route (classify, retrieve, then
generate/check_abstention/retry per attempt, cross_check, verify, fallback, web_search,
finalize) at 18 node runs, well below LangGraph's recursion limit of 25."""


MAX_N_CTX = 262_144
"""Largest context window accepted (tokens): above what the supported models were trained for,
and a llama.cpp context that size already needs gigabytes of memory."""


def _env(name: str, default: str) -> str:
    return os.environ.get(name, default)


@dataclass(kw_only=True)
class Context:
    """Knobs of one graph run. Validated on construction.

    Raises:
        ValueError: A value is out of range (the message names the field and the value).
    """

    index_dir: str = field(
        default_factory=lambda: _env("KBQA_INDEX", "index"),
        metadata={
            "description": "Index built by `kbqa index`: a directory, or a milvus:// store "
            "URI (docs/milvus.md) (env KBQA_INDEX)."
        },
    )
    model: str = field(
        default_factory=lambda: _env("KBQA_MODEL", DEFAULT_MODEL),
        metadata={"description": f"Generator: {', '.join(MODELS)} or a .gguf path."},
    )
    reader_adapter: str = field(
        default="",
        metadata={
            "description": "LoRA adapter for the generator: a directory from `kbqa finetune "
            "reader` or its adapter.gguf; empty = the model's own (gemma3-270m-reader ships "
            "one)."
        },
    )
    llm_url: str = field(
        default="",
        metadata={
            "description": "Base URL of an OpenAI-compatible server (llama.cpp, vLLM) that runs "
            "--model, e.g. http://127.0.0.1:8000/v1; the reader's and verifier's calls go there "
            "(needs kbqa[server]). Empty: llama.cpp in this process."
        },
    )
    llm_model: str = field(
        default="",
        metadata={"description": "The model's name on the --llm-url server (empty: its first)."},
    )
    llm_timeout: float = field(
        default=300.0,
        metadata={
            "description": "Seconds one call to the --llm-url server may take before it fails "
            "(the graph then answers with the pattern extractor); a busy server queues calls, "
            "so leave room for the queue."
        },
    )
    grounding: Literal["off", "snap", "constrained"] = field(
        default=DEFAULT_GROUNDING,
        metadata={
            "description": "Keep answers inside the context: snap (free decoding, then the "
            "closest context span), constrained (decoding masked to context spans) or off."
        },
    )
    abstention_threshold: float | None = field(
        default=None,
        metadata={
            "description": "Abstain when the reader's probability of beginning the abstention "
            "phrase (every token that can begin it, after any leading space or punctuation, or "
            "ending the reply before a word) is at least this, else mask those tokens (0 = "
            "plain greedy decoding; 1 = never; unset = the reader's own: its adapter "
            "manifest's serving.abstention_threshold, else 0)."
        },
    )
    embedder: str = field(
        default="",
        metadata={
            "description": "Query embedder (id or alias: static, e5); empty = the one the index "
            "was built with (its manifest). Another one is refused."
        },
    )
    k: int = field(default=3, metadata={"description": "Chunks retrieved on the first pass."})
    retry_k: int = field(
        default=10, metadata={"description": "Chunks retrieved on retry after an abstention."}
    )
    retry_unread_first: bool = field(
        default=True,
        metadata={
            "description": "On retry, rank the passages the reader has not read yet first, so "
            "that the prompt budget drops the ones it has (False: HybridRAG-BN's plain top "
            "retry_k)."
        },
    )
    max_retries: int = field(
        default=0,
        metadata={
            "description": "Retries after an abstention (HybridRAG-BN: 1). Off by default: on "
            "BanglaRQA validation it turned more correct abstentions into wrong answers than "
            "it found answers (docs/finetune.md, every stage measured)."
        },
    )
    bm25_weight: float = field(
        default=BM25_WEIGHT, metadata={"description": "Weight of BM25 in fusion (0 = off)."}
    )
    dense_weight: float = field(
        default=DENSE_WEIGHT, metadata={"description": "Weight of dense retrieval (0 = off)."}
    )
    fusion: Literal["weighted", "rrf"] = field(
        default="weighted", metadata={"description": "weighted (HybridRAG-BN) or rrf."}
    )
    candidate_pool: int = field(
        default=30, metadata={"description": "Candidates per retriever before fusion."}
    )
    reranker: str = field(
        default="off",
        metadata={
            "description": "Rerank the fused pool before reading: off; lexical (each chunk "
            "scored by its best sentence, BM25 with the index's IDF); or a directory from "
            "`kbqa finetune reranker` (an LLM cross-encoder in llama.cpp); or hf:PATH_OR_NAME, a "
            "cross-encoder such as bge-reranker-v2-m3 from a folder or the Hugging Face cache "
            "(sentence-transformers; nothing is downloaded); or bge-reranker-v2-m3[:FOLDER], the "
            "seed's reranker through FlagEmbedding (the bge extra). Off by default: "
            "lexical did not raise the answer-in-context share on both BanglaRQA samples "
            "(docs/retrieval.md)."
        },
    )
    rerank_pool: int = field(
        default=RERANK_POOL,
        metadata={"description": "Fused candidates the reranker sees; it keeps the best k."},
    )
    rerank_weight: float = field(
        default=RERANK_WEIGHT,
        metadata={
            "description": "Share of the fused retrieval score in the reranked order, in [0, 1] "
            "(the rest is the reranker's; each min-max normalised over the pool)."
        },
    )
    pad_previous: bool = field(
        default=True, metadata={"description": "Add the chunk before each hit as context."}
    )
    abstention_phrase: str = field(
        default=ABSTENTION_PHRASE,
        metadata={"description": "Answer given when the KB lacks it (Bangla and other questions)."},
    )
    abstention_phrase_en: str = field(
        default=ABSTENTION_PHRASE_EN,
        metadata={"description": "Answer given to an English question when the KB lacks it."},
    )
    n_ctx: int = field(default=4096, metadata={"description": "LLM context window in tokens."})
    max_answer_tokens: int = field(
        default=32, metadata={"description": "Most tokens the LLM may generate."}
    )
    max_answer_chars: int = field(
        default=200, metadata={"description": "Final answers are cut to this many characters."}
    )
    n_threads: int = field(
        default=0, metadata={"description": "llama.cpp CPU threads (0 = all cores)."}
    )
    use_llm: bool = field(
        default=True,
        metadata={
            "description": "False: answer with the pattern extractor only (no LLM), as when the "
            "model cannot be loaded."
        },
    )
    cross_check: Literal["auto", "on", "off"] = field(
        default="auto",
        metadata={
            "description": "Check the reader against the pattern extractor on the same "
            "context: take the extractor's span when the two share no word, abstain when no "
            "sentence holds half the question's words, answer an abstention when one holds 70%: "
            "auto = Bangla questions only (where it was measured to help), on = all, off = never."
        },
    )
    verify: bool = field(
        default=False,
        metadata={
            "description": "Run the verifier on the answer (HybridRAG-BN's refinement). Off by "
            "default: with the tuned reader, the prompted verifier lowered more answers than it "
            "raised on two BanglaRQA samples (26 vs 4, 17 vs 6) and doubled the time per "
            "question."
        },
    )
    verifier_model: str = field(
        default="",
        metadata={
            "description": "Verifier model; empty = the generator (with --verifier-adapter, the "
            "base it was trained on). A larger verifier measured no better per second spent."
        },
    )
    verifier_adapter: str = field(
        default="",
        metadata={
            "description": "LoRA adapter for the verifier: a directory from `kbqa finetune "
            "verifier` or its adapter.gguf; empty = the verifier model's own."
        },
    )
    max_verify_tokens: int = field(
        default=30, metadata={"description": "Most tokens the verifier may generate (paper: 30)."}
    )
    fallback: bool = field(
        default=False,
        metadata={
            "description": "On abstention, answer again from the index's precision sub-index "
            "(`kbqa index --strategy both`; HybridRAG-BN). Off by default: on BanglaRQA "
            "validation it lowered more answers than it raised (docs/finetune.md, every stage "
            "measured)."
        },
    )
    web_search: str = field(
        default_factory=lambda: _env("KBQA_WEB_SEARCH", "off"),
        metadata={
            "description": "When still unanswered, search the web: off (the default: a "
            "question's words leave the machine only when asked), ddgs (DuckDuckGo), "
            "static:PATH (a JSON file of results) or a registered name (env KBQA_WEB_SEARCH)."
        },
    )
    web_timeout: float = field(
        default=5.0, metadata={"description": "Hard time limit of one web search, in seconds."}
    )
    web_max_results: int = field(
        default=5, metadata={"description": "Web results given to the LLM."}
    )
    retriever: Any = field(
        default=None,
        compare=False,
        repr=False,
        metadata={
            "description": "A retriever object (kbqa.retrieval.retriever.Retriever) to use "
            "instead of loading index_dir's: a test's stand-in, or one built in Python.",
            "object": True,
        },
    )
    resources: Any = field(
        default=None,
        compare=False,
        repr=False,
        metadata={
            "description": "Parts handed in as objects (kbqa.resources.Resources: retriever, "
            "reader, verifier, reranker, web search) instead of loaded from these settings.",
            "object": True,
        },
    )

    def __post_init__(self) -> None:
        """Check every field against :data:`FIELD_CHECKS` (its type from its annotation, then
        its own rule) and the settings together against :data:`RULES`; nothing here reads a
        file or the network (:meth:`check_paths` does, before a run).

        Raises:
            ValueError: The first setting that breaks a check, named with its value.
        """
        for f in fields(self):
            value = getattr(self, f.name)
            problem = _type_problem(f.name, f.type, value)
            if problem is None and f.name in FIELD_CHECKS:
                problem = FIELD_CHECKS[f.name](value)
            if problem:
                raise ValueError(problem if problem.startswith(f.name) else f"{f.name} {problem}")
        for rule in RULES:
            if problem := rule(self):
                raise ValueError(problem)

    def check_paths(self) -> None:
        """The checks that read files, run before the first question (by
        :func:`~kbqa.resources.preload` and every ``kbqa`` command): a ``static:PATH`` web
        search's file exists, and a reranker directory holds a reranker's manifest.

        Raises:
            ValueError: The file or directory named is missing or of the wrong kind.
        """
        if self.web_search.startswith("static:") and not os.path.isfile(
            self.web_search.removeprefix("static:")
        ):
            raise ValueError(
                f"web_search {self.web_search!r}: no such file (static:PATH names a JSON file "
                "of results)"
            )
        if _is_reranker_dir_name(self.reranker):
            from kbqa.llm.rerank import reranker_dir_problem

            if problem := reranker_dir_problem(self.reranker):
                raise ValueError(
                    f"reranker must be one of {', '.join(RERANKERS)}, hf:PATH_OR_NAME, "
                    f"{BGE_RERANKER}[:FOLDER] or a directory from `kbqa finetune reranker`, "
                    f"got {self.reranker!r}: {problem}"
                )

    @property
    def grounding_mode(self) -> str:
        """The grounding that runs: ``constrained`` needs a logits processor in this process,
        so a reader behind ``llm_url`` grounds its answer afterwards (``snap``)."""
        return "snap" if self.llm_url and self.grounding == "constrained" else self.grounding

    def abstention_for(self, language: str | None) -> str:
        """The abstention answer for a question in ``language`` (``en``: ``abstention_phrase_en``,
        else ``abstention_phrase``)."""
        return self.abstention_phrase_en if language == "en" else self.abstention_phrase

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of the settings: every field except the injected objects (``retriever``)."""
        return [f.name for f in fields(cls) if not f.metadata.get("object")]

    def settings(self) -> dict[str, Any]:
        """The settings as plain values (JSON-ready; without the injected objects), as a run's
        ``config.json`` records them."""
        return {name: getattr(self, name) for name in self.field_names()}


def context_of(runtime: Any) -> Context:
    """The run's :class:`Context` (``runtime.context``, as LangGraph hands it to nodes and
    routes), or the defaults (``$KBQA_INDEX``, ``$KBQA_MODEL``...) when ``graph.invoke`` was
    called without ``context=``."""
    ctx = getattr(runtime, "context", None)
    return ctx if ctx is not None else _default_context()


@functools.cache
def _default_context() -> Context:
    return Context()


def _type_problem(name: str, annotation: Any, value: Any) -> str | None:
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


def _not_blank(value: Any) -> str | None:
    return None if value.strip() else "must not be empty: it is the answer of an abstention"


def _web_search_name(value: Any) -> str | None:
    from kbqa.web_search import known_web_search

    if value.startswith("static:") or known_web_search(value):
        return None
    return ("($KBQA_WEB_SEARCH, --web-search) must be ddgs, off, static:PATH of an existing "
            f"file, or a registered name; got {value!r}")  # fmt: skip


def _reranker_name(value: Any) -> str | None:
    if value == "hf:":
        return "hf: needs a cross-encoder: hf:PATH_OR_NAME"
    if not value.strip():
        return (f"must be one of {', '.join(RERANKERS)}, hf:PATH_OR_NAME, {BGE_RERANKER}"
                "[:FOLDER] or a directory from `kbqa finetune reranker`, got ''")  # fmt: skip
    return None


def _is_reranker_dir_name(value: str) -> bool:
    """``value`` names a reranker directory, not a built-in or model name."""
    return value not in RERANKERS and not value.startswith(("hf:", BGE_RERANKER))


def _llm_url(value: Any) -> str | None:
    if not value:
        return None
    from kbqa.llm.server import check_llm_url

    try:
        check_llm_url(value)
    except ValueError as exc:
        return str(exc)
    return None


FIELD_CHECKS: dict[str, Callable[[Any], str | None]] = {
    **dict.fromkeys(("k", "retry_k", "candidate_pool", "rerank_pool", "max_answer_tokens",
                     "max_answer_chars", "max_verify_tokens", "web_max_results"), _positive),
    "n_ctx": lambda v: _positive(v) or (
        None if v <= MAX_N_CTX else f"must be at most {MAX_N_CTX} tokens, got {v}"),
    "n_threads": _whole(),
    "max_retries": _whole(MAX_RETRIES),
    "abstention_phrase": _not_blank,
    "abstention_phrase_en": _not_blank,
    "web_search": _web_search_name,
    "llm_timeout": _within(0, 3600, open_low=True, unit=" seconds"),
    "web_timeout": _within(0, 60, open_low=True, unit=" seconds"),
    "abstention_threshold": _within(0, 1),
    "rerank_weight": _within(0, 1),
    "reranker": _reranker_name,
    "cross_check": lambda v: None if v in ("auto", "on", "off") else (
        f"must be auto, on or off, got {v!r}"),
    "grounding": _one_of(*GROUNDING_MODES),
    "fusion": _one_of("weighted", "rrf"),
    "llm_url": _llm_url,
}  # fmt: skip
"""Each field's own check (after its type's, from its annotation): a problem, or None."""


def _fusion_weights(c: Context) -> str | None:
    if c.bm25_weight < 0 or c.dense_weight < 0 or c.bm25_weight + c.dense_weight <= 0:
        return (f"fusion weights must be >= 0 and not both 0, got bm25_weight={c.bm25_weight}, "
                f"dense_weight={c.dense_weight}")  # fmt: skip
    return None


def _rerank_pool(c: Context) -> str | None:
    if c.reranker != "off" and c.rerank_pool < c.k:
        return (f"rerank_pool ({c.rerank_pool}) must be at least k ({c.k}): the reranker keeps "
                "the best k of the pool it sees")  # fmt: skip
    return None


def _retriever_problem(r: Any) -> str | None:
    if callable(getattr(r, "retrieve", None)) and all(hasattr(r, n) for n in ("chunks", "mode")):
        return None
    return ("a retriever object (retrieve(), chunks, mode: the "
            "kbqa.retrieval.retriever.Retriever protocol)")  # fmt: skip


def _retriever_object(c: Context) -> str | None:
    if c.retriever is None or not (wanted := _retriever_problem(c.retriever)):
        return None
    return f"retriever must be {wanted}, got {c.retriever!r}"


def _resources_object(c: Context) -> str | None:
    if c.resources is None:
        return None
    if not isinstance(c.resources, Resources):
        return f"resources must be a kbqa.resources.Resources, got {c.resources!r}"
    return c.resources.problem()


def _room_for_a_prompt(c: Context) -> str | None:
    if c.n_ctx < c.max_answer_tokens + 64:
        return (f"n_ctx ({c.n_ctx}) must be at least max_answer_tokens ({c.max_answer_tokens}) "
                "+ 64 to leave room for a prompt")  # fmt: skip
    return None


RULES: tuple[Callable[[Context], str | None], ...] = (
    _fusion_weights, _rerank_pool, _retriever_object, _resources_object, _room_for_a_prompt,
)  # fmt: skip
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
            "retriever": _retriever_problem, "precision_retriever": _retriever_problem,
            "reader": chat, "verifier": chat,
            "reranker": has("score", "a reranker (score(question, passages))"),
            "web_search": has("search", "a web search (search(query, max_results, timeout))"),
        }  # fmt: skip
        for name, check in needs.items():
            value = getattr(self, name)
            if value is not None and (wanted := check(value)):
                return f"resources.{name} must be {wanted}, got {value!r}"
        return None
