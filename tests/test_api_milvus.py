"""The Python API reads a Milvus store as ``kbqa ask --index milvus://...`` does (the
``milvus`` extra; fake models)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pymilvus", reason="kbqa[milvus] is not installed (pymilvus)")
pytest.importorskip("milvus_lite", reason="kbqa[milvus] is not installed (milvus-lite)")

from kbqa import KBQA
from kbqa.errors import IndexLoadError
from kbqa.stores.milvus import parse_store_uri, write_store

FAKE = {"embedder": "fake/hash", "cross_check": "off", "web_search": "off"}


def test_from_index_answers_from_a_milvus_store(tiny_index: Path, tmp_path: Path) -> None:
    uri = f"milvus://{tmp_path / 'kb.db'}#tiny"
    write_store(tiny_index, parse_store_uri(uri))
    local = KBQA.from_index(tiny_index, model="fake/script:ঢাকা", **FAKE)
    remote = KBQA.from_index(uri, model="fake/script:ঢাকা", **FAKE)
    question = "বাংলাদেশের রাজধানী কোথায়?"
    want, got = local.ask(question), remote.ask(question)
    assert got.answer == "ঢাকা"
    assert [c.chunk_id for c in got.sources] == [c.chunk_id for c in want.sources]


@pytest.mark.parametrize(
    ("uri", "says"),
    [("milvus://", "milvus://"), ("milvus://kb.db#bad name", "bad name")],
)
def test_a_malformed_milvus_uri_is_refused_by_name(uri: str, says: str) -> None:
    with pytest.raises(IndexLoadError, match=says):
        KBQA.from_index(uri, load=False, **FAKE)


def test_a_missing_milvus_store_is_an_index_load_error(tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="no Milvus Lite store"):
        KBQA.from_index(f"milvus://{tmp_path / 'none.db'}", **FAKE)
    assert not (tmp_path / "none.db").exists()
