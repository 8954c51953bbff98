"""The seed's BGE models through FlagEmbedding (issue 33): ``--embedder bge-m3[:FOLDER]`` and
``--reranker bge-reranker-v2-m3[:FOLDER]``, on tiny randomly initialised XLM-RoBERTa models the
tests build (no hub access); a model that is not there, or a missing extra, is a clear error."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from kbqa.embedders import load_embedder, resolve_embedder
from kbqa.errors import ModelError

WORDS = ("the a river paris seine flows through which capital ঢাকা বুড়িগঙ্গা নদীর তীরে "
         "অবস্থিত কোন শহর বাংলাদেশের রাজধানী")  # fmt: skip


def _tiny_xlmr(path: Path, *, classifier: bool) -> Path:
    """A two-layer XLM-RoBERTa with a word-level vocabulary, saved as a local folder: a BGE-M3
    (with its sparse and ColBERT heads) or, with ``classifier``, a one-logit cross-encoder."""
    pytest.importorskip("FlagEmbedding")
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import (
        PreTrainedTokenizerFast,
        XLMRobertaConfig,
        XLMRobertaForSequenceClassification,
        XLMRobertaModel,
    )

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    vocab = {w: i for i, w in enumerate([*specials, *dict.fromkeys(WORDS.split())])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", 0), ("</s>", 2)],
    )  # fmt: skip
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>", mask_token="<mask>", cls_token="<s>", sep_token="</s>",
        model_max_length=64,
    )  # fmt: skip
    config = XLMRobertaConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=32, pad_token_id=1,
                              max_position_embeddings=66, num_labels=1)  # fmt: skip
    torch.manual_seed(0)
    path.mkdir(parents=True)
    if classifier:
        XLMRobertaForSequenceClassification(config).save_pretrained(path)
    else:
        XLMRobertaModel(config).save_pretrained(path)
        torch.save(torch.nn.Linear(16, 1).state_dict(), path / "sparse_linear.pt")
        torch.save(torch.nn.Linear(16, 16).state_dict(), path / "colbert_linear.pt")
    fast.save_pretrained(path)
    return path


def test_bge_m3_from_a_folder_embeds_as_flagembedding_does(tmp_path: Path) -> None:
    from FlagEmbedding import BGEM3FlagModel  # imported by _tiny_xlmr's skip first

    folder = _tiny_xlmr(tmp_path / "m3", classifier=False)
    assert resolve_embedder(f"bge-m3:{tmp_path}/./m3") == f"bge-m3:{folder}"
    embedder = load_embedder(f"bge-m3:{folder}")
    assert (embedder.id, embedder.dim) == (f"bge-m3:{folder}", 16)
    texts = [f"w{i} ঢাকা বুড়িগঙ্গা নদীর তীরে অবস্থিত" for i in range(20)]  # two of its batches
    vectors = embedder.embed_passages(texts)
    assert vectors.shape == (20, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    direct = BGEM3FlagModel(str(folder), use_fp16=False, devices="cpu").encode_corpus(
        texts, return_dense=True
    )["dense_vecs"]
    assert np.allclose(vectors, direct, atol=1e-5)
    long = embedder.embed_queries(["river " * 5000])  # cut at max_length, not an error
    assert long.shape == (1, 16)


def test_an_index_built_with_bge_m3_answers_queries(tmp_path: Path) -> None:
    from kbqa.context import Context
    from kbqa.corpus.document import Document
    from kbqa.index import build_index
    from kbqa.passages import retrieve_records

    folder = _tiny_xlmr(tmp_path / "m3", classifier=False)
    docs = [
        Document(doc_id="d1", title="ঢাকা", text="ঢাকা বুড়িগঙ্গা নদীর তীরে অবস্থিত। " * 3),
        Document(doc_id="d2", title="Paris", text="the seine flows through paris " * 3),
    ]
    out = tmp_path / "idx"
    build_index(docs, out, load_embedder(f"bge-m3:{folder}"), progress=False)
    ctx = Context(index_dir=str(out), embedder=f"bge-m3:{folder}", k=1)
    records = retrieve_records("ঢাকা কোন নদীর তীরে অবস্থিত?", 1, ctx)
    assert records[0]["doc_id"] == "d1"
    assert ctx.embedder == f"bge-m3:{folder}"


def test_bge_reranker_scores_as_flag_reranker_and_reranks_the_pool(
    tmp_path: Path, tiny_index: Path
) -> None:
    from FlagEmbedding import FlagReranker

    from kbqa.context import Context
    from kbqa.embedders.bge import FlagCrossEncoder
    from kbqa.passages import retrieve_records
    from kbqa.resources import reranker_for

    folder = _tiny_xlmr(tmp_path / "rr", classifier=True)
    reranker = FlagCrossEncoder(f"bge-reranker-v2-m3:{folder}", max_length=64)
    passages = [("Paris", "the seine flows through paris"), ("", "ঢাকা বুড়িগঙ্গা নদীর তীরে")]
    scores = reranker.score("which river flows through paris", passages)
    direct = FlagReranker(str(folder), use_fp16=False, devices="cpu").compute_score(
        [("which river flows through paris", "Paris\nthe seine flows through paris"),
         ("which river flows through paris", "ঢাকা বুড়িগঙ্গা নদীর তীরে")], max_length=64,
    )  # fmt: skip
    assert scores == pytest.approx([float(s) for s in direct], abs=1e-5)
    assert scores[0] != scores[1]  # raw logits, not a constant
    assert reranker.score("q", []) == []

    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash",
                  reranker=f"bge-reranker-v2-m3:{folder}", rerank_pool=6, k=2)  # fmt: skip
    assert isinstance(reranker_for(ctx), FlagCrossEncoder)
    records = retrieve_records("ঢাকা কোন নদীর তীরে অবস্থিত?", 2, ctx)
    assert len([r for r in records if not r["is_padding"]]) == 2


def test_a_bge_model_not_in_the_cache_is_not_downloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("FlagEmbedding")
    from kbqa.embedders.bge import FlagCrossEncoder

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    with pytest.raises(ModelError, match=r"BAAI/bge-m3 is not in the Hugging Face cache.*nothing"):
        load_embedder("bge-m3")
    with pytest.raises(ModelError, match=r"BAAI/bge-reranker-v2-m3 is not in the .*bge-reranker"):
        FlagCrossEncoder("bge-reranker-v2-m3")
    assert not (tmp_path / "hf" / "hub" / "models--BAAI--bge-m3").exists()


def test_a_bge_folder_that_is_not_there_or_a_missing_extra_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_index: Path
) -> None:
    from kbqa.context import Context

    with pytest.raises(ModelError, match="no such model folder"):
        resolve_embedder(f"bge-m3:{tmp_path}/nothing")
    with pytest.raises(ModelError, match="no such model folder"):
        resolve_embedder("bge-m3:")
    with pytest.raises(ModelError, match=r"unknown embedder .*bge-m3"):
        resolve_embedder("bge-m4")
    (tmp_path / "m3").mkdir()
    monkeypatch.setitem(sys.modules, "FlagEmbedding", None)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # and no weights: the extra is named
    with pytest.raises(ModelError, match=r"need FlagEmbedding: pip install 'kbqa\[bge\]'"):
        load_embedder("bge-m3")
    with pytest.raises(ModelError, match=r"need FlagEmbedding: pip install 'kbqa\[bge\]'"):
        load_embedder(f"bge-m3:{tmp_path / 'm3'}")
    from kbqa.resources import reranker_for

    ctx = Context(index_dir=str(tiny_index), reranker=f"bge-reranker-v2-m3:{tmp_path / 'm3'}",
                  embedder="fake/hash")  # fmt: skip
    with pytest.raises(ModelError, match="need FlagEmbedding"):
        reranker_for(ctx)
