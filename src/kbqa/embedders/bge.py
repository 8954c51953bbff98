"""The seed's BGE models through FlagEmbedding (HybridRAG-BN embeds with BGE-M3 and reranks with
bge-reranker-v2-m3):

- ``--embedder bge-m3`` (or ``bge-m3:FOLDER``): ``BGEM3FlagModel``'s dense vectors (1024-d,
  CLS pooling, L2-normalised; Chen et al. 2024, "BGE M3-Embedding"), fused with BM25 like every
  dense embedder;
- ``--reranker bge-reranker-v2-m3`` (or ``bge-reranker-v2-m3:FOLDER``): ``FlagReranker``, a
  cross-encoder whose raw logits are returned and only compared within one question's pool
  (:func:`~kbqa.retrieval.rerank.rerank_hits` min-max normalises them), never thresholded
  (FlagEmbedding issue #250).

The bare name loads ``BAAI/bge-m3`` / ``BAAI/bge-reranker-v2-m3`` from the Hugging Face cache
only (``local_files_only``); nothing is downloaded. Two guards from the issue trackers: texts are
cut at :data:`MAX_LENGTH` word pieces (BGE-M3 accepts 8,192, and a long chunk at that length
exhausts memory: FlagEmbedding issue #807), and the models run in float32 (half precision on a
CPU is slow or unsupported: transformers issue #27769). BGE-M3's sparse (lexical) weights are
not fused: kbqa's BM25 over words and character 4-grams already is the lexical side, and without
the model's weights on the development machine whether they help could not be measured.

The ``bge`` extra installs FlagEmbedding.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kbqa.errors import ModelError

BGE_M3 = "bge-m3"
BGE_RERANKER = "bge-reranker-v2-m3"
REPOS = {BGE_M3: "BAAI/bge-m3", BGE_RERANKER: "BAAI/bge-reranker-v2-m3"}
"""The Hugging Face repository each bare name is looked up under, in the local cache only."""
MAX_LENGTH = 512
"""Word pieces a text (or a question-passage pair) is cut at: the seed's reranker setting, and
well above kbqa's 800-character chunks."""
BATCH_SIZE = 16
INSTALL_HINT = "pip install 'kbqa[bge]' or bash scripts/setup.sh bge (FlagEmbedding)"


def is_bge_name(name: str, model: str) -> bool:
    """``name`` is ``model`` (``bge-m3``, ``bge-reranker-v2-m3``) or ``model:FOLDER``."""
    return name == model or name.startswith(model + ":")


def canonical(name: str) -> str:
    """The id an index or a run records: the bare name, or ``NAME:`` and the folder's absolute
    path.

    Raises:
        ModelError: ``NAME:`` with no folder after it, or a folder that does not exist.
    """
    model, sep, folder = name.partition(":")
    if not sep:
        return name
    path = _folder(folder)
    if path is None:
        raise ModelError(f"{model}:{folder}: no such model folder (give {model}:FOLDER)")
    return f"{model}:{path}"


def _folder(text: str) -> Path | None:
    try:
        path = Path(text).expanduser().resolve()
        return path if text and path.is_dir() else None
    except OSError:  # a name the file system refuses (too long)
        return None


def model_dir(name: str) -> str:
    """The local folder of ``name`` (:func:`canonical` form): the folder it names, or the
    snapshot of its repository in the Hugging Face cache.

    Raises:
        ModelError: The bare name's model is not in the cache (nothing is downloaded).
    """
    model, _, folder = name.partition(":")
    if folder:
        return folder
    try:
        from huggingface_hub import snapshot_download

        return str(snapshot_download(REPOS[model], local_files_only=True))
    except Exception as exc:  # LocalEntryNotFoundError, an offline or corrupt cache
        raise ModelError(
            f"{REPOS[model]} is not in the Hugging Face cache (nothing is downloaded): "
            f"download it yourself (`hf download {REPOS[model]}`) or give {model}:FOLDER "
            f"({type(exc).__name__})"
        ) from None


def _usable_length(path: str, max_length: int) -> int:
    """``max_length`` cut to the word pieces the model's position table holds (XLM-RoBERTa
    numbers positions from 2), so a long text is truncated rather than indexed past the table."""
    try:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError):
        return max_length
    positions = getattr(config, "max_position_embeddings", None) or max_length
    offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
    return max(8, min(max_length, positions - offset))


def _load_flag(cls: str, name: str, max_length: int, **kwargs: Any) -> tuple[str, Any, int]:
    """``(id, model, max_length)``: FlagEmbedding's ``cls`` loaded on the CPU in float32 from
    ``name``'s folder (:func:`model_dir`), ``max_length`` cut to its positions; ``kwargs`` go
    to ``cls`` with the cut length as ``{key}=length`` for each key whose value is None.

    Raises:
        ModelError: FlagEmbedding is missing, the model is neither a folder nor cached, or it
            does not load.
    """
    model_id = canonical(name)
    try:  # the extra before the weights: without it, no download would help
        import FlagEmbedding
    except ImportError:
        raise ModelError(
            f"{BGE_M3} and {BGE_RERANKER} need FlagEmbedding: {INSTALL_HINT}"
        ) from None
    path = model_dir(model_id)
    length = _usable_length(path, max_length)
    options = {key: length if value is None else value for key, value in kwargs.items()}
    try:
        model = getattr(FlagEmbedding, cls)(path, use_fp16=False, devices="cpu", **options)
    except (OSError, ValueError, RuntimeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ModelError(f"cannot load {cls} from {path}: {first}") from None
    return model_id, model, length


class BGEM3Embedder:
    """BGE-M3's dense vectors (:class:`~kbqa.embedders.Embedder`).

    Args:
        name: ``bge-m3`` or ``bge-m3:FOLDER``.
        max_length: Word pieces a text is cut at.

    Raises:
        ModelError: FlagEmbedding is missing, or the model is neither a folder nor cached.
    """

    def __init__(self, name: str = BGE_M3, max_length: int = MAX_LENGTH) -> None:
        self.id, self._model, _ = _load_flag(
            "BGEM3FlagModel",
            name,
            max_length,
            normalize_embeddings=True,
            query_max_length=None,
            passage_max_length=None,
        )
        self.dim = int(self._encode(["dim"], queries=True).shape[1])

    def _encode(self, texts: list[str], queries: bool) -> Any:
        encode = self._model.encode_queries if queries else self._model.encode_corpus
        out: list[Any] = []
        for start in range(0, len(texts), BATCH_SIZE):
            batch = texts[start : start + BATCH_SIZE]
            # a batch_size above the batch keeps FlagEmbedding's own progress bar off
            found = encode(
                batch,
                batch_size=BATCH_SIZE + 1,
                return_dense=True,
                return_sparse=False,
                return_colbert_vecs=False,
            )
            vectors = found["dense_vecs"]
            out.append(np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1))
        return np.ascontiguousarray(np.concatenate(out)) if out else np.zeros((0, 0), np.float32)

    def embed_queries(self, texts: list[str]) -> Any:
        return self._encode(list(texts), queries=True)

    def embed_passages(self, texts: list[str]) -> Any:
        return self._encode(list(texts), queries=False)


class FlagCrossEncoder:
    """bge-reranker-v2-m3 through FlagEmbedding's ``FlagReranker``
    (:class:`~kbqa.retrieval.rerank.Reranker`): raw logits, one per pair.

    Args:
        name: ``bge-reranker-v2-m3`` or ``bge-reranker-v2-m3:FOLDER``.
        max_length: Word pieces of question and passage together.

    Raises:
        ModelError: FlagEmbedding is missing, or the model is neither a folder nor cached.
    """

    def __init__(self, name: str = BGE_RERANKER, max_length: int = MAX_LENGTH) -> None:
        self.id, self._model, self._max_length = _load_flag("FlagReranker", name, max_length)

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """The cross-encoder's logit for each ``(title, text)`` passage after the question."""
        if not passages:
            return []
        pairs = [(question, f"{title}\n{text}" if title else text) for title, text in passages]
        scores = self._model.compute_score(
            pairs, batch_size=len(pairs) + 1, max_length=self._max_length, normalize=False
        )
        return [float(s) for s in np.asarray(scores, dtype=np.float64).reshape(len(pairs))]
