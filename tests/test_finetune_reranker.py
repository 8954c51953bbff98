"""``kbqa finetune reranker``: pairs from the training questions (the answer's chunk against hard
negatives from the fused pool), rank metrics, settings, and the whole pipeline on a tiny
randomly initialised Gemma 3: trained, exported with ``"role": "reranker"``, validated in
llama.cpp, and served by ``--reranker DIR`` in the graph."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kbqa.embedders import HashEmbedder
from kbqa.evals.datasets import Question
from kbqa.finetune.questions import TrainingQuestion
from kbqa.finetune.reranker import RerankerConfig, build_pairs, rank_metrics
from kbqa.index import load_index
from kbqa.prompts.rerank import render_rerank_prompt
from kbqa.retrieval.retriever import HybridRetriever

QUESTIONS = [
    ("q1", "ঢাকা কোন নদীর তীরে অবস্থিত?", "বুড়িগঙ্গা", "d1"),
    ("q2", "রবীন্দ্রনাথ ঠাকুর কত সালে জন্মগ্রহণ করেন?", "১৮৬১", "d2"),
    ("q3", "Which river does Paris lie on?", "Seine", "d3"),
    ("q4", "পদ্মা কোন নদীর প্রধান শাখা?", "গঙ্গার", "d4"),
    ("q5", "When did Marie Curie win the Nobel Prize in Chemistry?", "1911", "d5"),
    ("q6", "কোন শহর বাংলাদেশের রাজধানী?", "কলকাতা", "d1"),  # not in its document: unusable
]


def _questions() -> list[TrainingQuestion]:
    return [TrainingQuestion(Question(qid, q, [a], doc)) for qid, q, a, doc in QUESTIONS]


def test_pairs_are_the_answer_chunk_against_hard_negatives(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.chunks

    def retrieve(question: str, n: int) -> list[int]:
        return [h.chunk_id for h in retriever.retrieve(question, n, pad_previous=False)]

    splits = {"d1": "train", "d2": "train", "d3": "val", "d4": "train", "d5": "train"}
    pairs, stats = build_pairs(_questions(), chunks, retrieve, splits, negatives=2, pool=5)
    assert (stats.questions, stats.usable) == (6, 5)
    by_q: dict[str, list[Any]] = {}
    for p in pairs:
        by_q.setdefault(p.qid.split("#")[0], []).append(p)
    for qid, question, answer, doc in QUESTIONS[:5]:
        yes, *no = by_q[qid]
        assert (yes.kind, yes.target) == ("yes", "Yes") and len(no) == 2
        gold = chunks[yes.context_chunk_ids[0]]
        assert gold.doc_id == doc and answer in gold.text
        assert yes.prompt == render_rerank_prompt(question, gold.title, gold.text)
        for n in no:
            assert (n.kind, n.target) == ("no", "No")
            assert answer not in chunks[n.context_chunk_ids[0]].text
        assert {p.split for p in by_q[qid]} == {splits[doc]}
        assert {p.language for p in by_q[qid]} == {"en" if question.isascii() else "bn"}
    assert stats.by_kind == {"train": {"yes": 4, "no": 8}, "val": {"yes": 1, "no": 2}}


def test_rank_metrics() -> None:
    ranked = [[True, False], [False, False, True], [False] * 4, [False] * 11 + [True]]
    m = rank_metrics(ranked)
    assert m["n"] == 3 and m["recall@1"] == pytest.approx(1 / 3, abs=1e-4)
    assert m["recall@3"] == pytest.approx(2 / 3, abs=1e-4)
    assert m["mrr@10"] == pytest.approx((1 + 1 / 3) / 3, abs=1e-4)
    assert rank_metrics([[False]])["n"] == 0


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("negatives", 0, "negatives must be at least 1"), ("pool", 0, "pool must be at least 1"),
     ("val_questions", -1, "val_questions must be >= 0"), ("lora_r", 0, "lora_r must be positive")],
)  # fmt: skip
def test_config_names_a_bad_value(field: str, value: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RerankerConfig(train="t", kb="k", **{field: value})


def test_the_reranker_command_hides_and_refuses_the_readers_example_settings() -> None:
    pytest.importorskip("transformers")
    from typer.testing import CliRunner

    from kbqa.cli import app

    runner = CliRunner()
    shown = runner.invoke(app, ["finetune", "reranker", "--help"]).output
    assert "--negatives" in shown and "--pool" in shown
    for flag in (
        "--served_share",
        "--paraphrase_share",
        "--train_k",
        "--yes_no_ratio",
        "--trap_ratio",
        "--trap_rules",
        "--rule_kinds",
    ):
        assert flag not in shown
    refused = runner.invoke(app, ["finetune", "reranker", "--train", "t", "--kb", "k",
                                  "--train-k", "3", "--served_share=0.5"])  # fmt: skip
    assert refused.exit_code == 2
    assert "--served_share, --train-k: a reader's setting" in refused.output


def test_the_manifest_states_the_terms_of_the_data_it_was_trained_on() -> None:
    from kbqa.finetune.manifest import DATA_TERMS, HAQUE_2020_SHA256, data_terms

    assert data_terms(Path("haque2020.qa.jsonl"), HAQUE_2020_SHA256) == DATA_TERMS
    other = data_terms(Path("mine.jsonl"), "ab" * 32)
    assert "Haque" not in other and "mine.jsonl" in other and "abababababab" in other


@pytest.mark.slow
def test_finetune_reranker_end_to_end_on_a_tiny_model(kb_file: Path, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from tiny_gemma import tiny_gemma_gguf

    from kbqa.context import Context
    from kbqa.finetune.reranker import run_reranker_finetune
    from kbqa.index import build_index
    from kbqa.llm.models import resolve_model
    from kbqa.passages import retrieve_records

    base = tiny_gemma_gguf(resolve_model("gemma3-270m")[0], tmp_path / "tiny.gguf")
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps({"qid": qid, "question": q, "answers": [a], "doc_id": d},
                                        ensure_ascii=False) + "\n"
                             for qid, q, a, d in QUESTIONS), "utf-8")  # fmt: skip
    out = tmp_path / "run"
    cfg = RerankerConfig(train=str(train), kb=str(kb_file), out=str(out), base_model=str(base),
                         max_steps=2, batch_size=1, grad_accum=2, threads=1, negatives=1, pool=4,
                         val_fraction=0.4, val_questions=5, warmup_steps=0)  # fmt: skip
    manifest = run_reranker_finetune(cfg, command="kbqa finetune reranker --test")
    assert manifest["role"] == "reranker" and manifest["training"]["steps"] == 2
    val = manifest["validation"]
    assert val["pool"] == 4 and val["fused"]["n"] == val["reranked"]["n"] >= 1
    saved = json.loads((out / "adapter" / "manifest.json").read_text("utf-8"))
    assert saved["role"] == "reranker" and (out / "adapter" / "adapter.gguf").is_file()
    assert str(tmp_path) not in json.dumps(saved["config"])  # no machine paths

    # served: Context accepts the directory, retrieval reranks with it
    index = tmp_path / "index"
    from conftest import DOCS

    build_index(DOCS, index, HashEmbedder(), progress=False)
    ctx = Context(index_dir=str(index), embedder="fake/hash", reranker=str(out / "adapter"),
                  rerank_pool=4, k=2)  # fmt: skip
    records = retrieve_records("ঢাকা কোন নদীর তীরে অবস্থিত?", 2, ctx)
    assert len([r for r in records if not r["is_padding"]]) == 2

    # other pairs are refused before examples.jsonl is rewritten
    from kbqa.errors import InputError

    pairs = (out / "examples.jsonl").read_bytes()
    ckpt = sorted((out / "checkpoints").glob("checkpoint-*"))[-1]
    with pytest.raises(InputError, match="trained on other examples"):
        run_reranker_finetune(replace(cfg, max_questions=3, resume_from=str(ckpt)))
    assert (out / "examples.jsonl").read_bytes() == pairs
    # the finished run resumed: nothing to train, exported again; no validation asked for
    again = run_reranker_finetune(replace(cfg, resume=True, val_questions=0))
    assert again["role"] == "reranker" and again["training"]["steps"] == 2
    assert "skipped" in again["validation"] and "fused" not in again["validation"]
