"""Run-time settings of the graph. LangGraph Studio shows these fields as editable settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Literal

from kbqa.prompts import ABSTENTION_PHRASE
from kbqa.retrieval.embedders import DEFAULT_EMBEDDER
from kbqa.retrieval.fusion import BM25_WEIGHT, DENSE_WEIGHT


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
        metadata={"description": "Index directory built by `kbqa index` (env KBQA_INDEX)."},
    )
    model: str = field(
        default_factory=lambda: _env("KBQA_MODEL", "gemma3-270m"),
        metadata={"description": "Generator: gemma3-270m, qwen2.5-coder-1.5b or a .gguf path."},
    )
    embedder: str = field(
        default=DEFAULT_EMBEDDER,
        metadata={"description": "Query embedder; must match the one the index was built with."},
    )
    k: int = field(default=3, metadata={"description": "Chunks retrieved on the first pass."})
    retry_k: int = field(
        default=10, metadata={"description": "Chunks retrieved on retry after an abstention."}
    )
    max_retries: int = field(
        default=1, metadata={"description": "Retries after an abstention (HybridRAG-BN: 1)."}
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
    pad_previous: bool = field(
        default=True, metadata={"description": "Add the chunk before each hit as context."}
    )
    abstention_phrase: str = field(
        default=ABSTENTION_PHRASE, metadata={"description": "Answer given when the KB lacks it."}
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

    def __post_init__(self) -> None:
        for name in (
            "k",
            "retry_k",
            "candidate_pool",
            "n_ctx",
            "max_answer_tokens",
            "max_answer_chars",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if (
            self.bm25_weight < 0
            or self.dense_weight < 0
            or self.bm25_weight + self.dense_weight <= 0
        ):
            raise ValueError(
                f"fusion weights must be >= 0 and not both 0, got bm25_weight={self.bm25_weight}, "
                f"dense_weight={self.dense_weight}"
            )
        if self.fusion not in ("weighted", "rrf"):
            raise ValueError(f"fusion must be 'weighted' or 'rrf', got {self.fusion!r}")
        if self.n_ctx < self.max_answer_tokens + 64:
            raise ValueError(
                f"n_ctx ({self.n_ctx}) must be at least max_answer_tokens "
                f"({self.max_answer_tokens}) + 64 to leave room for a prompt"
            )

    @classmethod
    def field_names(cls) -> list[str]:
        """Names of all settings."""
        return [f.name for f in fields(cls)]
