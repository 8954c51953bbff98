"""The LLM-based reranker served by llama.cpp: a GGUF base with the LoRA adapter of ``kbqa
finetune reranker`` scores each (question, passage) pair by the logit of ``" Yes"`` after the
rerank prompt (:mod:`kbqa.prompts.rerank`; FlagEmbedding's bge-reranker-v2-gemma recipe).

One prompt evaluation a pair and no generation. The question's prefix is evaluated once per
question; each pair then evaluates only its own tokens after it, in the key-value cache the
prefix left (``n_tokens`` rewound to the prefix, as llama-cpp-python's own prefix reuse does).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kbqa.errors import ModelError
from kbqa.prompts.rerank import (
    RELEVANT,
    RERANK_INSTRUCTION,
    render_rerank_prefix,
    render_rerank_prompt,
)

MANIFEST = "manifest.json"
ROLE = "reranker"
"""``manifest.json``'s ``role`` for an adapter that ``--reranker DIR`` serves."""


def reranker_dir(name: str | Path) -> Path:
    """The directory ``name`` stands for: a shipped reranker's folder in the package when
    ``name`` is a string equal to a name of :data:`~kbqa.llm.lora.SHIPPED_RERANKERS`, else
    ``name`` as a path (a :class:`~pathlib.Path` is never read as a name: ``Path("./NAME")``
    prints as ``NAME``)."""
    from kbqa.llm.lora import ADAPTERS_DIR, SHIPPED_RERANKERS

    if isinstance(name, str) and name in SHIPPED_RERANKERS:
        return ADAPTERS_DIR / name
    return Path(name)


class LlamaCppReranker:
    """Scores passages for a question with a llama.cpp model (:class:`~kbqa.retrieval.rerank.
    Reranker`).

    Args:
        llama: A loaded ``llama_cpp.Llama`` (with the reranker's adapter applied).
        name: The reranker's id in records.
        n_ctx: Its context window; a longer pair is cut to fit, keeping the instruction.
    """

    def __init__(self, llama: Any, name: str, n_ctx: int) -> None:
        self._llama = llama
        self.id = name
        self._n_ctx = n_ctx
        self._lock = threading.Lock()  # one llama.cpp context: one pair at a time
        self._yes = self._tokens(" " + RELEVANT, bos=False)[0]

    @classmethod
    def from_path(
        cls, base: Path, adapter: Path | None, *, n_ctx: int = 1024, n_threads: int | None = None
    ) -> LlamaCppReranker:
        """Load the base GGUF with the adapter GGUF applied.

        Raises:
            ModelError: llama-cpp-python is missing, or the files do not load.
        """
        from kbqa.llm.chat import open_llama

        llama = open_llama(base, n_ctx=n_ctx, n_threads=n_threads, lora_path=adapter)
        return cls(llama, adapter.parent.name if adapter else base.name, n_ctx)

    def _tokens(self, text: str, bos: bool) -> list[int]:
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """The ``" Yes"`` logit of each ``(title, text)`` passage after the question, in order.

        A pair whose tokens do not continue the prefix's exactly (a tokeniser merging across
        the newline) is evaluated whole instead, so the score is always that of the prompt as
        trained.
        """
        if not passages:
            return []
        with self._lock:
            prefix = self._tokens(render_rerank_prefix(question), bos=True)
            self._llama.reset()
            self._llama.eval(prefix)
            scores = []
            for title, text in passages:
                whole = self._fit(self._tokens(render_rerank_prompt(question, title, text), True))
                if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
                    self._llama.n_tokens = len(prefix)  # eval() drops the cache after it
                    self._llama.eval(whole[len(prefix) :])
                else:
                    self._llama.reset()
                    self._llama.eval(whole)
                    self._llama.reset()
                    self._llama.eval(prefix)
                scores.append(self._last_logit())
            return scores

    def _fit(self, tokens: list[int]) -> list[int]:
        """Cut the passage's end (before the instruction) so the pair fits the window."""
        if len(tokens) <= self._n_ctx:
            return tokens
        tail = self._tokens("\n" + RERANK_INSTRUCTION, bos=False)
        return tokens[: self._n_ctx - len(tail)] + tail

    def _last_logit(self) -> float:
        logits = np.ctypeslib.as_array(
            self._llama._ctx.get_logits(), shape=(self._llama.n_vocab(),)
        )
        return float(logits[self._yes])


def reranker_dir_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a reranker directory (None when it is one): not a directory, no
    ``manifest.json`` (unless it holds a shipped reranker's weights), a manifest that is not a
    JSON object, or another ``role``. A name of
    :data:`~kbqa.llm.lora.SHIPPED_RERANKERS` is its folder in the package (:func:`reranker_dir`)."""
    directory = reranker_dir(path)
    manifest = directory / MANIFEST
    try:
        if not directory.is_dir():
            return "no such directory" if not directory.exists() else "not a directory"
    except OSError as exc:  # a name the file system refuses (too long, ...)
        return f"not a usable path ({exc.strerror or exc})"
    try:
        data = json.loads(manifest.read_text("utf-8"))
    except FileNotFoundError:
        return None if _holds_a_shipped_reranker(directory) else f"it has no {MANIFEST}"
    except (OSError, ValueError) as exc:
        return f"its {MANIFEST} does not read as JSON ({exc})"
    if not isinstance(data, dict):
        return f"its {MANIFEST} is not a JSON object"
    role = data.get("role", "reader")
    if role != ROLE:
        return f'its {MANIFEST} has "role": {json.dumps(role)}, not "{ROLE}"'
    return None


def _holds_a_shipped_reranker(directory: Path) -> bool:
    """``directory`` has no manifest but its ``adapter.gguf`` is a reranker's: a copy of a
    shipped reranker's weights (:func:`kbqa.llm.lora.shipped_weights`), or a link to a file
    whose own manifest says so."""
    from kbqa.llm.lora import load_adapter

    try:
        adapter = load_adapter(str(directory))
    except ModelError:
        return False
    return adapter.manifest.get("role") == ROLE  # a copy's, or a linked file's own


def is_reranker_dir(path: str | Path) -> bool:
    """``path`` is a directory whose ``manifest.json`` says ``"role": "reranker"``."""
    return reranker_dir_problem(path) is None


def load_llm_reranker(path: str | Path, n_threads: int | None = None) -> LlamaCppReranker:
    """The reranker an adapter directory of ``kbqa finetune reranker`` describes: its base model
    (the manifest's ``base_model``, resolved as ``--model`` resolves names) and ``adapter.gguf``.

    Args:
        path: The adapter directory.
        n_threads: llama.cpp threads (None: its default).

    Raises:
        ModelError: Not a reranker directory (the reason named), a base model the manifest
            names that cannot be resolved (the manifest named), or files that do not load.
    """
    from kbqa.llm.lora import ADAPTER_FILE, load_adapter
    from kbqa.llm.models import resolve_model

    directory = reranker_dir(path)
    if problem := reranker_dir_problem(directory):
        raise ModelError(
            f"{path} is not a reranker ({problem}): a directory from `kbqa finetune reranker` "
            f'holds {ADAPTER_FILE} and a {MANIFEST} with "role": "{ROLE}"'
        )
    # a shipped name loads from the package; any other spelling as given (``./NAME``)
    adapter = load_adapter(str(directory) if directory != Path(path) else str(path))
    if (role := adapter.manifest.get("role", "reader")) != ROLE:  # a link to another's weights
        raise ModelError(
            f"{path} is not a reranker: its {ADAPTER_FILE} is {adapter.path}, a {role}'s adapter"
        )
    base_name = str(adapter.manifest.get("base_model", "gemma3-270m"))
    try:
        base, _ = resolve_model(base_name)
    except ModelError as exc:
        raise ModelError(f"{directory / MANIFEST} names base_model {base_name!r}: {exc}") from None
    return LlamaCppReranker.from_path(base, adapter.path, n_threads=n_threads)
