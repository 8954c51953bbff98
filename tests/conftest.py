"""Shared fixtures: a small Bangla/English knowledge base indexed with the deterministic hash
embedder, and the location of the real data (``../shared/data`` or ``$KBQA_DATA_DIR``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["KBQA_WEB_SEARCH"] = "off"  # tests never reach the internet; route tests opt in
# Milvus Lite serves over gRPC in this process; with gRPC's fork handlers on, a chat spawned by
# pexpect while its threads were busy died before exec (epoll_wait: Bad file descriptor)
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from kbqa.corpus.document import Document
from kbqa.embedders import HashEmbedder
from kbqa.index import build_index

DOCS = [
    Document("d1", "ঢাকা", "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।"),
    Document(
        "d2",
        "রবীন্দ্রনাথ ঠাকুর",
        "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন। তিনি ১৯১৩ সালে নোবেল পুরস্কার পান।",
    ),
    Document(
        "d3",
        "Paris",
        "Paris is the capital of France. It lies on the Seine.",
        "https://en.example.org/wiki/Paris",
    ),
    Document("d4", "পদ্মা নদী", "পদ্মা বাংলাদেশের একটি প্রধান নদী। এটি গঙ্গার প্রধান শাখা।"),
    Document(
        "d5",
        "Marie Curie",
        "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    ),
]


def long_doc() -> Document:
    """A document long enough for several chunks (for padding tests)."""
    sentences = [f"বাক্য নম্বর {i} এখানে কিছু তথ্য আছে।" for i in range(120)]
    return Document("long", "দীর্ঘ", " ".join(sentences))


@pytest.fixture(scope="session")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Index of DOCS + one long document, built with the ``fake/hash`` embedder."""
    out = tmp_path_factory.mktemp("idx") / "tiny"
    build_index([*DOCS, long_doc()], out, HashEmbedder(), progress=False)
    return out


@pytest.fixture(scope="session")
def both_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """DOCS indexed with both strategies (coverage and precision sub-indexes)."""
    from kbqa.index import StrategyInput, build_indexes

    out = tmp_path_factory.mktemp("idx") / "both"
    docs = [*DOCS, long_doc()]
    parts = {"coverage": StrategyInput(docs, 800, 150), "precision": StrategyInput(docs, 1000, 150)}
    build_indexes(parts, out, HashEmbedder(), progress=False)
    return out


@pytest.fixture
def kb_file(tmp_path: Path) -> Path:
    """DOCS as a JSON Lines knowledge base."""
    path = tmp_path / "kb.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"doc_id": d.doc_id, "title": d.title, "text": d.text, "url": d.url},
                ensure_ascii=False,
            )
            + "\n"
            for d in DOCS
        ),
        encoding="utf-8",
    )
    return path


def data_dir() -> Path | None:
    """The shared evaluation data, or None when absent."""
    env = os.environ.get("KBQA_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    return next((p for p in candidates if (p / "bn" / "bnwiki_kb.jsonl").is_file()), None)


def tiny_gemma_base(path: Path) -> Path:
    """A one-block gemma3 GGUF holding only ``blk.0.attn_q.weight`` (1024 x 640), the weight the
    test adapters adapt: enough for the adapter checks and the export, no real model."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_block_count(1)
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((1024, 640), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
