"""``--embedder hf:PATH_OR_NAME`` (issue 33): a sentence-transformers model as the dense
embedder, through langchain-huggingface's ``HuggingFaceEmbeddings`` when it is installed, else
``SentenceTransformer`` itself; nothing is downloaded."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbqa.embedders import load_embedder, resolve_embedder
from kbqa.errors import ModelError


def test_hf_names_resolve_to_the_id_an_index_records(tmp_path: Path) -> None:
    assert resolve_embedder("hf:minilm") == resolve_embedder("hf:all-MiniLM-L6-v2")
    assert resolve_embedder("hf:minilm") == "hf:all-minilm-l6-v2"
    (tmp_path / "model").mkdir()
    assert resolve_embedder(f"hf:{tmp_path}/./model") == f"hf:{tmp_path / 'model'}"
    with pytest.raises(ModelError, match="hf: needs a model"):
        resolve_embedder("hf:")


def test_a_model_neither_in_a_folder_nor_in_the_cache_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    monkeypatch.setitem(sys.modules, "langchain_huggingface", None)
    with pytest.raises(ModelError, match=r"(?s)nothing is downloaded.*hf:minilm"):
        load_embedder("hf:someone/no-such-model")


def test_langchain_huggingface_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers")
    made: dict[str, Any] = {}

    class FakeHuggingFaceEmbeddings:  # the constructor and method kbqa calls
        def __init__(self, **kwargs: Any) -> None:
            made.update(kwargs)

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[1.0, 0.0] if "a" in t else [0.0, 1.0] for t in texts]

    fake = types.ModuleType("langchain_huggingface")
    fake.HuggingFaceEmbeddings = FakeHuggingFaceEmbeddings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "langchain_huggingface", fake)
    embedder = load_embedder("hf:someone/a-model")
    assert made["model_name"] == "someone/a-model"
    assert made["encode_kwargs"] == {"normalize_embeddings": True}
    assert made["model_kwargs"]["local_files_only"] is True  # nothing downloaded
    assert embedder.dim == 2 and embedder.embed_queries(["a", "b"]).dtype == np.float32


def test_minilm_from_its_package_embeds_english_by_meaning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("all_minilm_l6_v2")
    monkeypatch.setitem(sys.modules, "langchain_huggingface", None)
    embedder = load_embedder("hf:minilm")
    assert (embedder.id, embedder.dim) == ("hf:all-minilm-l6-v2", 384)
    q = embedder.embed_queries(["Which river flows through Paris?"])
    passages = ["The Seine runs through the French capital.",
                "Marie Curie won the Nobel Prize in Chemistry in 1911."]  # fmt: skip
    p = embedder.embed_passages(passages)
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
    scores = (p @ q.T).ravel()
    assert scores[0] > scores[1]
    long = embedder.embed_passages(["river " * 5000])  # cut at max_seq_length, no error
    assert long.shape == (1, 384)


def _tiny_cross_encoder(path: Path) -> Path:
    """A randomly initialised one-layer BERT cross-encoder with a word-level vocabulary, saved
    as a local model folder (no hub access)."""
    pytest.importorskip("sentence_transformers")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    words = "the a river paris seine flows through which nobel prize curie won 1911 capital"
    vocab = path / "vocab.txt"
    path.mkdir(parents=True)
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words.split()]))
    BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(path)
    config = BertConfig(vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, num_labels=1, max_position_embeddings=64)  # fmt: skip
    BertForSequenceClassification(config).save_pretrained(path)
    return path


def test_a_local_cross_encoder_reranks_the_pool(tmp_path: Path, tiny_index: Path) -> None:
    from sentence_transformers import CrossEncoder

    from kbqa.context import Context
    from kbqa.embedders.hf import CrossEncoderReranker
    from kbqa.passages import retrieve_records
    from kbqa.resources import reranker_for

    folder = _tiny_cross_encoder(tmp_path / "ce")
    reranker = CrossEncoderReranker(f"hf:{folder}", max_length=64)
    passages = [("Paris", "the seine flows through paris"), ("", "curie won the nobel prize")]
    scores = reranker.score("which river flows through paris", passages)
    direct = CrossEncoder(str(folder), max_length=64, device="cpu").predict(
        [("which river flows through paris", "Paris\nthe seine flows through paris"),
         ("which river flows through paris", "curie won the nobel prize")]
    )  # fmt: skip
    assert scores == pytest.approx([float(s) for s in direct], abs=1e-5)
    assert reranker.score("q", []) == []

    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", reranker=f"hf:{folder}",
                  rerank_pool=6, k=2, rerank_weight=0.0)  # fmt: skip
    assert isinstance(reranker_for(ctx), CrossEncoderReranker)
    records = retrieve_records("ঢাকা কোন নদীর তীরে অবস্থিত?", 2, ctx)
    assert len([r for r in records if not r["is_padding"]]) == 2


def test_a_cross_encoder_that_is_not_there_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    from kbqa.context import Context
    from kbqa.embedders.hf import CrossEncoderReranker

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ModelError, match=r"BAAI/bge-reranker-v2-m3.*nothing is downloaded"):
        CrossEncoderReranker("hf:BAAI/bge-reranker-v2-m3")
    with pytest.raises(ValueError, match="reranker hf: needs a cross-encoder"):
        Context(reranker="hf:")


def test_a_name_the_file_system_refuses_is_an_error_not_a_crash() -> None:
    """A break-it trial: a 300-character name crashed ``--embedder hf:`` and ``--reranker``
    with ``OSError: File name too long``."""
    from kbqa.context import Context

    long = "a" * 300
    assert resolve_embedder(f"hf:{long}") == f"hf:{long}"  # not a folder, so a hub name
    with pytest.raises(ValueError, match="not a usable path"):
        Context(reranker=long).check_paths()
