"""Run-time settings of the graph. LangGraph Studio shows these fields as editable settings."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from kbqa.context_checks import (
    FIELD_CHECKS,
    MAX_N_CTX,
    MAX_RETRIES,
    RULES,
    Resources,
    is_reranker_dir_name,
    reranker_choices,
    type_problem,
)
from kbqa.llm.grounding import DEFAULT_GROUNDING
from kbqa.llm.models import DEFAULT_MODEL, MODELS
from kbqa.prompts import ABSTENTION_PHRASE, ABSTENTION_PHRASE_EN
from kbqa.retrieval.fusion import BM25_WEIGHT, DENSE_WEIGHT
from kbqa.retrieval.rerank import RERANK_POOL, RERANK_WEIGHT


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
    model_en: str = field(
        default="",
        metadata={
            "description": "Reader for the questions classify finds English: a model name or a "
            ".gguf path (with --reader-adapter-en); empty = --model. A given "
            "--abstention-threshold holds for both readers; the verifier stays --model's."
        },
    )
    reader_adapter_en: str = field(
        default="",
        metadata={
            "description": "LoRA adapter of the English reader (--model-en, else --model); "
            "empty = --reader-adapter when --model-en is empty too, else that model's own."
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
    reading: Literal["joint", "each"] = field(
        default="each",
        metadata={
            "description": "How generate reads the hits: each (one prompt a hit with its "
            "padding chunk, best first, until a reading is sure: --stop-reading-below; the "
            "answer of the reading least likely to abstain, after Clark and Gardner 2018) or "
            "joint (all in one prompt; its tokens stream). The retry reads jointly."
        },
    )
    stop_reading_below: float = field(
        default=0.3,
        metadata={
            "description": "Under --reading each, answer from a hit whose reading did not "
            "abstain and whose abstention probability is below this, without reading the hits "
            "after it (0 reads every hit, as does a reader without an abstention threshold; 0.3 "
            "cut the median seconds a question by 14-70% for 0.004-0.013 F1 on BanglaRQA and "
            "XQuAD-en: docs/finetune-log.md)."
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
            "scored by its best sentence, BM25 with the index's IDF); gemma3-270m-reranker "
            "(the LLM cross-encoder kbqa trained, shipped) or a directory from `kbqa finetune "
            "reranker` (an LLM cross-encoder in llama.cpp); or hf:PATH_OR_NAME, a "
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
    rerank_add: int = field(
        default=0,
        metadata={
            "description": "0: the reranker reorders the pool and the reader reads its best k; "
            "N > 0: the reader reads the fused top k, then the reranker's best N chunks of the "
            "pool that are not among them (read last, so under --reading each only when the "
            "first k readings were unsure)."
        },
    )
    pad_previous: bool = field(
        default=True, metadata={"description": "Add the chunk before each hit as context."}
    )
    abstention_phrase: str = field(
        default=ABSTENTION_PHRASE,
        metadata={"description": "Answer given to a Bangla question when the KB lacks it."},
    )
    abstention_phrase_en: str = field(
        default=ABSTENTION_PHRASE_EN,
        metadata={
            "description": "Answer given to a question not in Bangla (English or another "
            "language) when the KB lacks it."
        },
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
            "context, with the rules cross_check_rules (--cross-check-rules) names (by default "
            "date only; otherwise it records whether the two agree): auto = Bangla questions "
            "only, on = all, off = never."
        },
    )
    cross_check_rules: str = field(
        default="date",
        metadata={
            "description": "The cross-check's rules that apply, comma-separated: abstain (no "
            "sentence holds half the question's words), extractor (the extractor's span "
            "replaces an answer that shares no word with it), wider-span (it replaces an "
            "agreeing answer to a list, untyped or yes/no question), answer (it answers a "
            "settled abstention), date (it answers a date question the reader answered with "
            "no digit); or all, or none. Default date: no other rule raised both BanglaRQA "
            "samples without lowering questions written in people's own words "
            "(docs/finetune.md, 'Cross-check')."
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
            problem = type_problem(f.name, f.type, value)
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
        if is_reranker_dir_name(self.reranker):
            from kbqa.llm.rerank import reranker_dir_problem

            if problem := reranker_dir_problem(self.reranker):
                raise ValueError(
                    f"reranker must be one of {reranker_choices()}, got {self.reranker!r}: "
                    f"{problem}"
                )

    @property
    def grounding_mode(self) -> str:
        """The grounding that runs: ``constrained`` needs a logits processor in this process,
        so a reader behind ``llm_url`` grounds its answer afterwards (``snap``)."""
        return "snap" if self.llm_url and self.grounding == "constrained" else self.grounding

    def reader_for(self, language: str | None) -> tuple[str, str]:
        """The reader's model and adapter for a question in ``language``: ``(model_en or
        model, reader_adapter_en)`` for English when either English setting is given, else
        ``(model, reader_adapter)``."""
        if language == "en" and (self.model_en or self.reader_adapter_en):
            return self.model_en or self.model, self.reader_adapter_en
        return self.model, self.reader_adapter

    def readers_said(self) -> str:
        """``model NAME``, with the English reader when it is another (for banners)."""
        model, adapter = self.reader_for("en")
        if (model, adapter) == self.reader_for(None):
            return f"model {self.model}"
        return f"model {self.model} (English: {f'{model} + {adapter}' if adapter else model})"

    def abstention_for(self, language: str | None) -> str:
        """The abstention answer for a question in ``language`` (``en``, which
        :func:`~kbqa.answers.language.detect_language` returns for every question not in Bangla:
        ``abstention_phrase_en``; else ``abstention_phrase``)."""
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


__all__ = [
    "MAX_N_CTX",
    "MAX_RETRIES",
    "Context",
    "Resources",
    "context_of",
]
