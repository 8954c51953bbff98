"""Run-time settings of the graph. LangGraph Studio shows these fields as editable settings."""

from __future__ import annotations

import functools
import math
import os
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

    def __post_init__(self) -> None:
        for name in (
            "k",
            "retry_k",
            "candidate_pool",
            "rerank_pool",
            "n_ctx",
            "max_answer_tokens",
            "max_answer_chars",
            "max_verify_tokens",
            "web_max_results",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.n_ctx > MAX_N_CTX:
            raise ValueError(f"n_ctx must be at most {MAX_N_CTX} tokens, got {self.n_ctx}")
        for name in ("max_retries", "n_threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type in ("bool", bool) and not isinstance(value, bool):
                raise ValueError(f"{f.name} must be true or false, got {value!r}")
            if f.type in ("str", str) and not isinstance(value, str):
                raise ValueError(f"{f.name} must be a string, got {value!r}")
            number = f.type in ("float", float) or (f.type == "float | None" and value is not None)
            if number and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"{f.name} must be a number, got {value!r}")
        for name in ("bm25_weight", "dense_weight", "web_timeout", "abstention_threshold",
                     "llm_timeout", "rerank_weight"):  # fmt: skip
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        for name in ("abstention_phrase", "abstention_phrase_en"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name} must not be empty: it is the answer of an abstention")
        if not 0 <= self.max_retries <= MAX_RETRIES:
            raise ValueError(
                f"max_retries must be between 0 and {MAX_RETRIES}, got {self.max_retries!r}"
            )
        from kbqa.web_search import known_web_search

        if not known_web_search(self.web_search):
            raise ValueError(
                "web_search ($KBQA_WEB_SEARCH, --web-search) must be ddgs, off, static:PATH "
                f"of an existing file, or a registered name; got {self.web_search!r}"
            )
        if not 0 < self.llm_timeout <= 3600:
            raise ValueError(f"llm_timeout must be in (0, 3600] seconds, got {self.llm_timeout!r}")
        if not 0 < self.web_timeout <= 60:
            raise ValueError(f"web_timeout must be in (0, 60] seconds, got {self.web_timeout!r}")
        if (
            self.bm25_weight < 0
            or self.dense_weight < 0
            or self.bm25_weight + self.dense_weight <= 0
        ):
            raise ValueError(
                f"fusion weights must be >= 0 and not both 0, got bm25_weight={self.bm25_weight}, "
                f"dense_weight={self.dense_weight}"
            )
        if self.abstention_threshold is not None and not 0 <= self.abstention_threshold <= 1:
            raise ValueError(
                f"abstention_threshold must be in [0, 1], got {self.abstention_threshold!r}"
            )
        if self.reranker == "hf:":
            raise ValueError("reranker hf: needs a cross-encoder: hf:PATH_OR_NAME")
        if self.reranker not in RERANKERS and not self.reranker.startswith(("hf:", BGE_RERANKER)):
            from kbqa.llm.rerank import reranker_dir_problem

            if problem := reranker_dir_problem(self.reranker):
                raise ValueError(
                    f"reranker must be one of {', '.join(RERANKERS)}, hf:PATH_OR_NAME, "
                    f"{BGE_RERANKER}[:FOLDER] or a "
                    f"directory from `kbqa finetune reranker`, got {self.reranker!r}: {problem}"
                )
        if self.reranker != "off" and self.rerank_pool < self.k:
            raise ValueError(
                f"rerank_pool ({self.rerank_pool}) must be at least k ({self.k}): the reranker "
                "keeps the best k of the pool it sees"
            )
        if not 0 <= self.rerank_weight <= 1:
            raise ValueError(f"rerank_weight must be in [0, 1], got {self.rerank_weight!r}")
        if self.cross_check not in ("auto", "on", "off"):
            raise ValueError(f"cross_check must be auto, on or off, got {self.cross_check!r}")
        if self.grounding not in GROUNDING_MODES:
            raise ValueError(
                f"grounding must be one of {', '.join(GROUNDING_MODES)}, got {self.grounding!r}"
            )
        if self.llm_url:
            from kbqa.llm.server import check_llm_url

            check_llm_url(self.llm_url)
        if self.fusion not in ("weighted", "rrf"):
            raise ValueError(f"fusion must be 'weighted' or 'rrf', got {self.fusion!r}")
        if self.retriever is not None and not (
            callable(getattr(self.retriever, "retrieve", None))
            and all(hasattr(self.retriever, name) for name in ("chunks", "mode"))
        ):
            raise ValueError(
                "retriever must be a retriever object (retrieve(), chunks, mode: the "
                f"kbqa.retrieval.retriever.Retriever protocol), got {self.retriever!r}"
            )
        if self.n_ctx < self.max_answer_tokens + 64:
            raise ValueError(
                f"n_ctx ({self.n_ctx}) must be at least max_answer_tokens "
                f"({self.max_answer_tokens}) + 64 to leave room for a prompt"
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
