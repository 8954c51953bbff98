"""Index writes are atomic; bad index directories fail with a clear error."""

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DOCS

from kbqa.corpus.document import Document
from kbqa.embedders import HashEmbedder
from kbqa.errors import IndexLoadError, InputError
from kbqa.index import (
    StrategyInput,
    build_index,
    build_indexes,
    dense_text,
    load_index,
)


class ExplodingEmbedder(HashEmbedder):
    def embed_passages(self, texts: list[str]):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom in the middle of the build")


def listing(folder: Path) -> list[str]:
    """Names in ``folder``, without the version directories an index link points into."""
    return sorted(p.name for p in folder.iterdir() if ".v-" not in p.name)


def test_manifest(tiny_index: Path) -> None:
    manifest = json.loads((tiny_index / "manifest.json").read_text())
    assert manifest["embedder"] == "fake/hash"
    assert manifest["documents"] == 6
    assert manifest["chunking"] == {"strategy": "coverage", "size": 800, "overlap": 150}
    idx = load_index(tiny_index)
    assert manifest["chunks"] == len(idx.chunks) == idx.dense.ntotal


def test_failed_build_leaves_old_index_untouched(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS[:2], out, HashEmbedder(), progress=False)
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(RuntimeError, match="boom"):
        build_index(DOCS, out, ExplodingEmbedder(), progress=False)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert before == after
    # no temp dir left behind; only the (resumable) embedding cache
    assert listing(tmp_path) == [".idx.embed-cache", "idx"]
    assert len(load_index(out).chunks) == 2


def test_failed_first_build_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError):
        build_index(DOCS, tmp_path / "idx", ExplodingEmbedder(), progress=False)
    assert listing(tmp_path) == [".idx.embed-cache"]


def test_rebuild_replaces_index(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS[:1], out, HashEmbedder(), progress=False)
    build_index(DOCS, out, HashEmbedder(), progress=False)
    assert load_index(out).manifest["documents"] == 5
    assert listing(tmp_path) == ["idx"]


def test_refuses_to_overwrite_a_non_index_directory(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a kbqa index"):
        build_index(DOCS, tmp_path / "mine", HashEmbedder(), progress=False)
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_empty_knowledge_base(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no text"):
        build_index([Document("x", "", "   ")], tmp_path / "idx", HashEmbedder(), progress=False)


def test_missing_and_corrupt_indexes(tiny_index: Path, tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="index not found"):
        load_index(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(IndexLoadError, match=r"manifest\.json is missing"):
        load_index(tmp_path / "empty")
    bad = tmp_path / "bad"
    shutil.copytree(tiny_index, bad)
    (bad / "manifest.json").write_text("{not json")
    with pytest.raises(IndexLoadError, match="corrupt"):
        load_index(bad)
    shutil.copytree(tiny_index, bad, dirs_exist_ok=True)
    (bad / "dense.faiss").write_bytes(b"garbage")
    with pytest.raises(IndexLoadError, match="corrupt"):
        load_index(bad)
    shutil.copytree(tiny_index, bad, dirs_exist_ok=True)
    (bad / "dense.faiss").unlink()
    with pytest.raises(IndexLoadError, match=r"dense\.faiss is missing"):
        load_index(bad)
    shutil.copytree(tiny_index, bad, dirs_exist_ok=True)
    lines = (bad / "chunks.jsonl").read_text().splitlines()
    (bad / "chunks.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(IndexLoadError, match="counts disagree"):
        load_index(bad)


@pytest.mark.parametrize(
    ("array", "edit", "problem"),
    [
        ("indices", lambda a: a.__setitem__(0, 100_000_000), "a document id outside"),
        ("indices", lambda a: a.__setitem__(-1, -1), "a document id outside"),
        ("indptr", lambda a: a.__setitem__(1, a[-1] + 5), "column bounds are out of order"),
        ("data", lambda a: a.__setitem__(0, float("nan")), "not a number"),
        ("indices", lambda a: a.astype("float32"), "not integers"),
        ("indptr", lambda a: a.reshape(1, -1), "not one-dimensional"),
        ("indptr", lambda a: a[: len(a) // 2], "a term whose column is outside"),
    ],
)
def test_a_bm25_matrix_edited_out_of_range_is_refused_at_load(
    tiny_index: Path, tmp_path: Path, array: str, edit: Any, problem: str
) -> None:
    """A break-it trial: a document id out of range failed in retrieval as an IndexError."""
    import numpy as np

    bad = tmp_path / "bad"
    shutil.copytree(tiny_index, bad)
    path = bad / "bm25" / f"{array}.csc.index.npy"
    values = np.load(path)
    edited = edit(values)  # in place (None), or a new array
    np.save(path, values if edited is None else edited)
    with pytest.raises(IndexLoadError, match=problem):
        load_index(bad)


def test_inconsistent_prev_chunk_id_is_detected(tiny_index: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(tiny_index, bad)
    rows = [json.loads(line) for line in (bad / "chunks.jsonl").read_text().splitlines()]
    rows[1]["prev_chunk_id"] = 99
    (bad / "chunks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(IndexLoadError, match="row 1 is inconsistent"):
        load_index(bad)


def test_stale_temp_dirs_of_killed_builds_are_removed(tmp_path: Path) -> None:
    stale = tmp_path / ".idx.tmp-999999999"
    stale.mkdir()
    (stale / "partial").write_text("x")
    build_index(DOCS, tmp_path / "idx", HashEmbedder(), progress=False)
    assert listing(tmp_path) == ["idx"]


class CountingEmbedder(HashEmbedder):
    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.batches = 0
        self.fail_after = fail_after

    def embed_passages(self, texts: list[str]):  # type: ignore[no-untyped-def]
        if self.fail_after is not None and self.batches >= self.fail_after:
            raise KeyboardInterrupt
        self.batches += 1
        return super().embed_passages(texts)


def test_interrupted_build_resumes_without_re_embedding(tmp_path: Path) -> None:
    import kbqa.index.embed_cache as index_mod

    docs = [Document(f"d{i}", "", f"document number {i} says something {i}.") for i in range(100)]
    batches = -(-100 // index_mod.EMBED_BATCH)
    with pytest.raises(KeyboardInterrupt):
        build_index(docs, tmp_path / "idx", CountingEmbedder(fail_after=2), progress=False)
    assert not (tmp_path / "idx").exists()
    second = CountingEmbedder()
    report = build_index(docs, tmp_path / "idx", second, progress=False)
    assert second.batches == batches - 2
    assert report.resumed_chunks == 2 * index_mod.EMBED_BATCH
    fresh = tmp_path / "fresh"
    build_index(docs, fresh, HashEmbedder(), progress=False)
    assert (tmp_path / "idx" / "dense.faiss").read_bytes() == (fresh / "dense.faiss").read_bytes()
    assert not (tmp_path / ".idx.embed-cache").exists()  # removed after success


def test_changed_knowledge_base_does_not_reuse_the_cache(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        build_index(DOCS, tmp_path / "idx", CountingEmbedder(fail_after=0), progress=False)
    other = [Document("z", "", "completely different text")]
    counting = CountingEmbedder()
    report = build_index(other, tmp_path / "idx", counting, progress=False)
    assert report.resumed_chunks == 0 and counting.batches == 1


def _parts(docs: list[Document]) -> dict[str, StrategyInput]:
    return {
        "coverage": StrategyInput(docs, 800, 150),
        "precision": StrategyInput(docs, 1000, 150),
    }


def test_both_strategies_embed_each_distinct_text_once(tmp_path: Path) -> None:
    long = Document("long", "Long", " ".join(f"sentence {i} is here." for i in range(120)))
    docs = [*DOCS, long]  # the short documents chunk identically both ways
    emb = CountingTextsEmbedder()
    report = build_indexes(_parts(docs), tmp_path / "idx", emb, progress=False)
    cov = load_index(tmp_path / "idx")
    prec = load_index(tmp_path / "idx", strategy="precision")
    assert cov.manifest["chunking"]["strategy"] == "coverage"
    assert prec.manifest["chunking"] == {"strategy": "precision", "size": 1000, "overlap": 150}
    assert len(prec.chunks) < len(cov.chunks)
    texts = {dense_text(c) for c in cov.chunks} | {dense_text(c) for c in prec.chunks}
    assert sorted(emb.seen) == sorted(texts)  # each distinct text embedded exactly once
    assert report.distinct_texts == report.embedded_chunks == len(texts)
    assert report.chunks == len(cov.chunks) + len(prec.chunks) > len(texts)
    # the precision sub-index's vectors are the right ones, not shifted
    for i, c in enumerate(prec.chunks):
        expected = HashEmbedder().embed_passages([dense_text(c)])[0]
        assert np.allclose(prec.dense.reconstruct(i), expected)
    top = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert top["default"] == "coverage" and set(top["indexes"]) == {"coverage", "precision"}
    with pytest.raises(IndexLoadError, match="no 'fancy' index; it holds coverage, precision"):
        load_index(tmp_path / "idx", strategy="fancy")


def test_a_single_index_refuses_another_strategy(tiny_index: Path) -> None:
    assert load_index(tiny_index, strategy="coverage").chunks
    with pytest.raises(IndexLoadError, match="is a coverage index, not precision"):
        load_index(tiny_index, strategy="precision")


def test_rebuild_reuses_vectors_of_unchanged_texts(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False)
    emb = CountingTextsEmbedder()
    changed = [*DOCS[:-1], Document("new", "", "A brand new page about otters.")]
    report = build_indexes(_parts(changed), out, emb, progress=False)
    assert emb.seen == ["A brand new page about otters."]
    assert report.reused_chunks == report.distinct_texts - 1
    again = CountingTextsEmbedder()
    build_index(changed, out, again, progress=False, reuse=False)
    assert len(again.seen) == len(load_index(out).chunks)
    other = CountingTextsEmbedder()
    other.id = "fake/other"
    build_index(changed, out, other, progress=False)  # another embedder reuses nothing
    assert len(other.seen) == len(load_index(out).chunks)


def test_both_names_the_strategy_left_empty(tmp_path: Path) -> None:
    parts = _parts(DOCS)
    parts["precision"] = StrategyInput([Document("a", "", " "), Document("b", "", "")])
    with pytest.raises(InputError, match=r"\(precision\): no text to index \(2 documents"):
        build_indexes(parts, tmp_path / "idx", HashEmbedder(), progress=False)
    assert not (tmp_path / "idx").exists()


class CountingTextsEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed_passages(self, texts: list[str]):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed_passages(texts)


def test_a_rebuild_never_deletes_files_kbqa_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False)
    (out / "mykb.jsonl").write_text("precious")
    with pytest.raises(InputError, match=r"holds files kbqa did not write \(mykb\.jsonl\)"):
        build_index(DOCS, out, HashEmbedder(), progress=False)
    assert (out / "mykb.jsonl").read_text() == "precious"


def test_a_corrupt_index_can_be_rebuilt_in_place(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False)
    (out / "manifest.json").write_text("{garbled")
    build_index(DOCS, out, HashEmbedder(), progress=False)
    assert load_index(out).chunks


def test_a_sub_index_is_not_overwritten_alone(tmp_path: Path) -> None:
    build_indexes(_parts(DOCS), tmp_path / "idx", HashEmbedder(), progress=False)
    with pytest.raises(InputError, match="is the 'precision' part of the index"):
        build_index(DOCS, tmp_path / "idx" / "precision", HashEmbedder(), progress=False)


def test_a_broken_sub_index_only_loses_its_own_vectors(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_indexes(_parts(DOCS), out, HashEmbedder(), progress=False)
    (out / "precision" / "dense.faiss").unlink()
    emb = CountingTextsEmbedder()
    report = build_indexes(_parts(DOCS), out, emb, progress=False)
    assert report.reused_chunks == report.distinct_texts and emb.seen == []


def test_bm25_first_index_answers_before_its_dense_part_and_fuses_after(tmp_path: Path) -> None:
    from kbqa.index import continue_index
    from kbqa.resources import load_retriever

    out = tmp_path / "idx"
    report = build_index(DOCS, out, HashEmbedder(), progress=False, dense="later")
    assert report.embedded_chunks == 0
    assert not (out / "dense.faiss").exists()
    assert json.loads((out / "manifest.json").read_text())["dense"] == "pending"
    early = load_retriever(str(out), "")
    assert not early.dense_ready and early.search_dense("Paris", 3) == {}
    hits = early.retrieve("capital of France", 1, pad_previous=False)
    assert early.index.chunks[hits[0].chunk_id].doc_id == "d3"
    with pytest.raises(ValueError, match="not built yet"):
        early.retrieve("capital of France", 1, bm25_weight=0.0)

    report = continue_index(out, progress=False)
    assert report.embedded_chunks == len(DOCS)
    assert json.loads((out / "manifest.json").read_text())["dense"] == "ready"
    load_retriever.cache_clear()
    late = load_retriever(str(out), "")
    assert late.dense_ready and late.search_dense("Paris", 3)
    # the same vectors as a build that embedded at once
    build_index(DOCS, tmp_path / "now", HashEmbedder(), progress=False)
    assert (out / "dense.faiss").read_bytes() == (tmp_path / "now" / "dense.faiss").read_bytes()
    assert continue_index(out, progress=False).chunks == 0  # nothing left to do
    assert listing(tmp_path) == ["idx", "now"]


def test_interrupted_continuation_resumes(tmp_path: Path) -> None:
    import kbqa.index.embed_cache as index_mod
    from kbqa.index import continue_index
    from kbqa.index.embed_cache import BuildInterrupted, interrupted_build

    docs = [Document(f"d{i}", "", f"document number {i} says something {i}.") for i in range(100)]
    out = tmp_path / "idx"
    build_index(docs, out, HashEmbedder(), progress=False, dense="later")
    with pytest.raises(BuildInterrupted) as info:
        continue_index(out, progress=False, embedder=CountingEmbedder(fail_after=2))
    done = 2 * index_mod.EMBED_BATCH
    assert (info.value.done, info.value.total) == (done, 100)
    assert str(info.value) == f"{done} of 100 chunks embedded"
    assert (
        interrupted_build(out)
        == f"an interrupted build of it has {done} of 100 chunk texts embedded"
    )
    assert load_index(out).dense is None  # still usable, BM25 alone
    second = CountingEmbedder()
    report = continue_index(out, progress=False, embedder=second)
    assert second.batches == -(-100 // index_mod.EMBED_BATCH) - 2
    assert report.resumed_chunks == done
    assert load_index(out).dense.ntotal == 100
    assert interrupted_build(out) is None


def test_continue_refuses_another_embedder_and_non_indexes(tmp_path: Path) -> None:
    from kbqa.index import continue_index

    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False, dense="later")

    class Other(HashEmbedder):
        id = "other/embedder"

    with pytest.raises(IndexLoadError, match="built for embedder 'fake/hash'"):
        continue_index(out, progress=False, embedder=Other())
    with pytest.raises(IndexLoadError, match="not a kbqa index"):
        continue_index(tmp_path, progress=False)


def test_interrupted_first_build_is_named_by_load(tmp_path: Path) -> None:
    docs = [Document(f"d{i}", "", f"document number {i} says something {i}.") for i in range(100)]
    with pytest.raises(KeyboardInterrupt):
        build_index(docs, tmp_path / "idx", CountingEmbedder(fail_after=1), progress=False)
    with pytest.raises(IndexLoadError, match=r"32 of 100 chunk texts embedded: run the same"):
        load_index(tmp_path / "idx")


def test_bm25_first_both_strategies_continue_together(tmp_path: Path) -> None:
    from kbqa.index import continue_index

    docs = [*DOCS]
    parts = {"coverage": StrategyInput(docs, 800, 150), "precision": StrategyInput(docs, 1000, 150)}
    out = tmp_path / "both"
    build_indexes(parts, out, HashEmbedder(), progress=False, dense="later")
    assert load_index(out, strategy="precision").dense is None
    report = continue_index(out, progress=False)
    assert report.distinct_texts == len(DOCS)  # identical texts embedded once
    for name in ("coverage", "precision"):
        assert load_index(out, strategy=name).dense.ntotal == len(DOCS)
    assert json.loads((out / "manifest.json").read_text())["dense"] == "ready"


def test_default_index_has_no_dense_part_and_says_how_to_add_one(tmp_path: Path) -> None:
    from kbqa.embedders import load_embedder
    from kbqa.index import continue_index
    from kbqa.resources import load_retriever

    out = tmp_path / "idx"
    report = build_index(DOCS, out, load_embedder(), progress=False)
    assert report.embedded_chunks == 0 and not (out / "dense.faiss").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["embedder"], manifest["dense"]) == ("none", "none")
    assert manifest["bm25_terms"] == "words+char4grams#"
    retriever = load_retriever(str(out), "")
    assert not retriever.dense_ready and not retriever.index.dense_pending
    hits = retriever.retrieve("বাংলাদেশের রাজধানীতে কী আছে?", 1, pad_previous=False)
    assert retriever.index.chunks[hits[0].chunk_id].doc_id == "d1"
    with pytest.raises(IndexLoadError, match=r"without a dense part.*--embedder static or e5"):
        continue_index(out, progress=False)
    with pytest.raises(IndexLoadError, match="built with embedder 'none'") as refused:
        load_retriever(str(out), "e5")
    # the folder named, not the version folder it points to (a new user's and a break-it finding)
    assert str(refused.value).startswith(f"{out} was built") and ".v-" not in str(refused.value)


def test_an_older_words_only_index_is_queried_with_words(tiny_index: Path, tmp_path: Path) -> None:
    from kbqa.embedders import HashEmbedder as Hash
    from kbqa.retrieval.retriever import HybridRetriever

    old = tmp_path / "old"
    shutil.copytree(tiny_index, old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["bm25_terms"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    retriever = HybridRetriever(load_index(old), Hash())
    assert retriever.index.bm25_terms == "words"
    calls: list[list[str]] = []
    real = retriever.index.bm25.get_scores
    retriever.index.bm25.get_scores = lambda tokens: calls.append(tokens) or real(tokens)
    retriever.search_bm25("Paris capital", 3)
    assert calls == [["paris", "capital"]]


def test_a_word_and_an_ngram_of_a_longer_word_are_different_terms(tmp_path: Path) -> None:
    from kbqa.embedders import load_embedder
    from kbqa.resources import load_retriever

    docs = [
        Document("island", "Indonesia", "Java is the most populous island in Indonesia. " * 6),
        Document("js", "JavaScript", "JavaScript runs in browsers."),
        Document("py", "Python", "Python is a programming language."),
    ]
    out = tmp_path / "idx"
    build_index(docs, out, load_embedder(), progress=False)
    retriever = load_retriever(str(out), "")
    for query in ("Java", "What is Java?"):
        hits = retriever.retrieve(query, 1, pad_previous=False)
        assert retriever.index.chunks[hits[0].chunk_id].doc_id == "island", query


def test_continue_rebuilds_a_missing_dense_file_and_checks_the_index_first(
    tmp_path: Path,
) -> None:
    from kbqa.index import continue_index

    out = tmp_path / "idx"
    build_index(DOCS, out, HashEmbedder(), progress=False)
    (out / "dense.faiss").unlink()
    assert continue_index(out, progress=False).embedded_chunks == len(DOCS)
    assert load_index(out).dense.ntotal == len(DOCS)

    pending = tmp_path / "pending"
    build_index(DOCS, pending, HashEmbedder(), progress=False, dense="later")
    lines = (pending / "chunks.jsonl").read_text().splitlines()
    (pending / "chunks.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(IndexLoadError, match="counts disagree"):
        continue_index(pending, progress=False)
    assert json.loads((pending / "manifest.json").read_text())["dense"] == "pending"


def test_continue_messages_for_missing_file_and_sub_index(tmp_path: Path) -> None:
    from kbqa.index import continue_index

    with pytest.raises(IndexLoadError, match="index not found"):
        continue_index(tmp_path / "none", progress=False)
    (tmp_path / "afile").write_text("x")
    with pytest.raises(IndexLoadError, match="is a file"):
        continue_index(tmp_path / "afile", progress=False)
    parts = {"coverage": StrategyInput(DOCS, 800, 150), "precision": StrategyInput(DOCS, 1000, 150)}
    build_indexes(parts, tmp_path / "both", HashEmbedder(), progress=False, dense="later")
    with pytest.raises(IndexLoadError, match="part of the index"):
        continue_index(tmp_path / "both" / "precision", progress=False)


def test_bm25_first_rebuild_keeps_an_interrupted_builds_vectors(tmp_path: Path) -> None:
    from kbqa.index import continue_index

    docs = [Document(f"d{i}", "", f"document number {i} says something {i}.") for i in range(100)]
    out = tmp_path / "idx"
    with pytest.raises(KeyboardInterrupt):
        build_index(docs, out, CountingEmbedder(fail_after=2), progress=False)
    build_index(docs, out, HashEmbedder(), progress=False, dense="later")
    report = continue_index(out, progress=False)
    assert report.resumed_chunks == 64


def test_a_second_writer_of_the_same_index_is_refused(tmp_path: Path) -> None:
    from kbqa.index.embed_cache import BuildLock

    out = tmp_path / "idx"
    with BuildLock(out), pytest.raises(InputError, match="another `kbqa index` is writing"):
        build_index(DOCS, out, HashEmbedder(), progress=False)
    build_index(DOCS, out, HashEmbedder(), progress=False)  # free again
    assert not (tmp_path / ".idx.lock").exists()
