"""The Milvus backend (optional extra ``kbqa[milvus]``) on Milvus Lite: a store written from a
built index retrieves what the in-process index retrieves (BM25 scores, fused top-k, padding,
the precision sub-index), ``kbqa index --store`` + ``kbqa ask --index milvus://`` work end to
end, and bad URIs or stores give errors that name the problem."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "pymilvus", reason="the Milvus extra is not installed: pip install 'kbqa[milvus]'"
)
pytest.importorskip(
    "milvus_lite", reason="Milvus Lite is not installed: pip install 'kbqa[milvus]'"
)

from typer.testing import CliRunner

from kbqa.cli import app
from kbqa.errors import IndexLoadError
from kbqa.resources import load_retriever
from kbqa.stores.milvus import (
    MilvusRetriever,
    open_milvus_retriever,
    parse_store_uri,
    store_has_strategy,
    write_store,
)

QUERIES = [
    "বাংলাদেশের রাজধানী কোথায়?",
    "রবীন্দ্রনাথ ঠাকুর কবে নোবেল পুরস্কার পান?",
    "What is the capital of France?",
    "Marie Curie Nobel Prize Chemistry",
    "পদ্মা নদী গঙ্গার শাখা",
    "বাক্য নম্বর 42",
]


@pytest.fixture(scope="module")
def tiny_store(tiny_index: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``tiny_index`` written into a Milvus Lite store."""
    uri = f"milvus://{tmp_path_factory.mktemp('milvus') / 'tiny.db'}#tiny"
    assert write_store(tiny_index, parse_store_uri(uri)) == {"coverage": 12}
    return uri


@pytest.fixture(scope="module")
def both_store(both_index: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``both_index`` (coverage and precision) written into a Milvus Lite store."""
    uri = f"milvus://{tmp_path_factory.mktemp('milvus') / 'both.db'}#both"
    write_store(both_index, parse_store_uri(uri))
    return uri


@pytest.fixture(scope="module")
def remote(tiny_store: str) -> MilvusRetriever:
    return open_milvus_retriever(tiny_store)


def test_bm25_scores_are_bm25s_scores(tiny_index: Path, remote: MilvusRetriever) -> None:
    local = load_retriever(str(tiny_index), "")
    for q in QUERIES:
        want, got = local.search_bm25(q, 30), remote.search_bm25(q, 30)
        assert got.keys() == want.keys(), q
        for cid, score in want.items():
            assert got[cid] == pytest.approx(score, rel=1e-5), (q, cid)


def test_repeated_query_terms_count_as_bm25s_counts_them(
    tiny_index: Path, remote: MilvusRetriever
) -> None:
    local = load_retriever(str(tiny_index), "")
    q = "ঢাকা ঢাকা ঢাকা নদী"
    want, got = local.search_bm25(q, 30), remote.search_bm25(q, 30)
    assert got.keys() == want.keys()
    assert all(got[c] == pytest.approx(s, rel=1e-5) for c, s in want.items())


def test_dense_scores_match(tiny_index: Path, remote: MilvusRetriever) -> None:
    local = load_retriever(str(tiny_index), "")
    for q in QUERIES:
        want, got = local.search_dense(q, 5), remote.search_dense(q, 5)
        assert sorted(got.values(), reverse=True) == pytest.approx(
            sorted(want.values(), reverse=True), abs=1e-5
        )


@pytest.mark.parametrize("fusion", ["weighted", "rrf"])
def test_same_top_k_as_in_process(tiny_index: Path, remote: MilvusRetriever, fusion: str) -> None:
    local = load_retriever(str(tiny_index), "")
    # the long document's chunks tie in BM25 and nearly tie in the hash embedding, where the
    # order of equal candidates is each engine's own: the first five queries have no such ties
    for q in QUERIES[:5]:
        want = local.retrieve(q, 5, fusion=fusion, pad_previous=False)  # type: ignore[arg-type]
        got = remote.retrieve(q, 5, fusion=fusion, pad_previous=False)  # type: ignore[arg-type]
        assert [h.chunk_id for h in got] == [h.chunk_id for h in want], (q, fusion)
        assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)


def test_milvus_weighted_ranker_is_one_round_trip_with_its_own_scores(
    tiny_store: str, tiny_index: Path
) -> None:
    server = open_milvus_retriever(tiny_store, weighted_ranker="milvus")
    hits = server.retrieve(QUERIES[0], 5, pad_previous=False)
    local = load_retriever(str(tiny_index), "").retrieve(QUERIES[0], 5, pad_previous=False)
    assert hits and hits[0].chunk_id == local[0].chunk_id  # the one chunk both parts rank first
    assert all(0.0 <= h.score <= 1.0 for h in hits)
    with pytest.raises(ValueError, match="weighted_ranker"):
        MilvusRetriever(
            server.client, server.store, "coverage", server.manifest, None, weighted_ranker="both"
        )  # type: ignore[arg-type]


def test_padding_chunks_equal_in_process(tiny_index: Path, remote: MilvusRetriever) -> None:
    local = load_retriever(str(tiny_index), "")
    padded = 0
    for q in [*QUERIES[:5], "বাক্য নম্বর 90 এখানে কিছু তথ্য আছে"]:
        want = local.retrieve(q, 3)
        got = remote.retrieve(q, 3)
        assert [(c.chunk_id, c.rank, c.is_padding) for c in got] == [
            (c.chunk_id, c.rank, c.is_padding) for c in want
        ], q
        for c in got:
            assert remote.chunks[c.chunk_id] == local.chunks[c.chunk_id]
            padded += c.is_padding
    assert padded > 0  # the long document's hits bring their previous chunks


def test_chunks_are_fetched_lazily_by_id(tiny_index: Path, remote: MilvusRetriever) -> None:
    local = load_retriever(str(tiny_index), "")
    assert len(remote.chunks) == len(local.chunks) == 12
    assert remote.chunks[-1] == local.chunks[-1]
    assert remote.chunks[2:5] == local.chunks[2:5]
    with pytest.raises(IndexError, match="out of range"):
        remote.chunks[12]


def test_precision_sub_index_is_its_own_collection(both_index: Path, both_store: str) -> None:
    assert store_has_strategy(both_store, "precision")
    assert not store_has_strategy(both_store, "bogus")
    local = load_retriever(str(both_index), "", "precision")
    remote = open_milvus_retriever(both_store, "", "precision")
    assert remote.strategy == "precision" and len(remote.chunks) == len(local.chunks)
    assert remote.chunks[0] == local.chunks[0]
    for q in QUERIES[:5]:
        want = [c.chunk_id for c in local.retrieve(q, 3)]
        assert [c.chunk_id for c in remote.retrieve(q, 3)] == want, q
    assert open_milvus_retriever(both_store).strategy == "coverage"  # the default
    with pytest.raises(IndexLoadError, match="no 'bogus' index; it holds coverage, precision"):
        open_milvus_retriever(both_store, "", "bogus")


def test_index_store_then_ask_end_to_end(kb_file: Path, tmp_path: Path) -> None:
    store = f"milvus://{tmp_path / 'kb.db'}#kb"
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "index",
            str(kb_file),
            "--out",
            str(tmp_path / "idx"),
            "--embedder",
            "fake/hash",
            "--store",
            store,
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"store written  {store}: coverage 5 chunks" in result.output
    result = runner.invoke(
        app, ["ask", "বাংলাদেশের রাজধানী কোথায়?", "--index", store, "--model", "fake/script:ঢাকা"]
    )
    assert result.exit_code == 0, result.output
    assert "answer: ঢাকা" in result.output and "[1] ঢাকা" in result.output
    # without a knowledge base, --store writes the --out index already built (replacing it)
    result = runner.invoke(app, ["index", "--out", str(tmp_path / "idx"), "--store", store])
    assert result.exit_code == 0 and "coverage 5 chunks" in result.output, result.output


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("milvus://", "names no Milvus store"),
        ("milvus://#kb", "names no Milvus store"),
        ("milvus://kb.sqlite", "ends in .db"),
        ("milvus://kb.db#bad-name", "not valid for Milvus"),
        ("milvus://grpc://host:19530", "unsupported Milvus address"),
        ("milvus://http://", "has no host"),
        ("milvus://https://#kb", "has no host"),
        ("milvus://http:///", "has no host"),
        ("milvus://.db", "only the extension"),
        ("milvus://some/dir/.db#kb", "only the extension"),
    ],
)
def test_bad_uris_are_named(uri: str, says: str) -> None:
    with pytest.raises(IndexLoadError, match=says):
        parse_store_uri(uri)


def test_missing_store_and_collection_are_named(tiny_store: str, tmp_path: Path) -> None:
    with pytest.raises(IndexLoadError, match="no Milvus Lite store at"):
        open_milvus_retriever(f"milvus://{tmp_path / 'absent.db'}")
    assert not (tmp_path / "absent.db").exists()  # reading never creates a store
    other = tiny_store.rsplit("#", 1)[0] + "#nothere"
    with pytest.raises(IndexLoadError, match=r"no kbqa index named 'nothere'.*#tiny"):
        open_milvus_retriever(other)


def test_another_embedder_is_refused(tiny_store: str) -> None:
    with pytest.raises(IndexLoadError, match="built with embedder 'fake/hash'"):
        open_milvus_retriever(tiny_store, "e5")


def test_store_is_not_overwritten_unless_asked(tiny_index: Path, tiny_store: str) -> None:
    with pytest.raises(IndexLoadError, match="already holds collections"):
        write_store(tiny_index, parse_store_uri(tiny_store))


def _fresh_store(index: Path, where: Path, name: str = "kb") -> str:
    uri = f"milvus://{where}#{name}"
    write_store(index, parse_store_uri(uri))
    assert open_milvus_retriever(uri).retrieve(QUERIES[0], 3)
    return uri


def _collections(uri: str) -> list[str]:
    from kbqa.stores.milvus.uri import connect

    client = connect(parse_store_uri(uri))
    try:
        return sorted(client.list_collections())
    finally:
        client.close()


def test_refused_reindex_leaves_the_old_store_answering(
    tiny_index: Path, kb_file: Path, tmp_path: Path
) -> None:
    uri = _fresh_store(tiny_index, tmp_path / "kb.db")
    before = [c.chunk_id for c in open_milvus_retriever(uri).retrieve(QUERIES[0], 3)]
    runner = CliRunner()
    later = tmp_path / "later"
    args = ["index", str(kb_file), "--out", str(later), "--embedder", "fake/hash"]
    assert runner.invoke(app, [*args, "--dense", "later"]).exit_code == 0
    result = runner.invoke(app, ["index", "--out", str(later), "--store", uri])
    assert result.exit_code == 2, result.output
    assert f"{later}: the dense part is not built yet" in result.output
    assert ".later.v-" not in result.output  # the --out name, not its version folder
    assert [c.chunk_id for c in open_milvus_retriever(uri).retrieve(QUERIES[0], 3)] == before


def test_varchar_limit_is_checked_before_the_old_store_is_touched(
    tiny_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.stores.milvus import store as store_mod

    uri = _fresh_store(tiny_index, tmp_path / "kb.db")
    names = _collections(uri)
    monkeypatch.setattr(store_mod, "MAX_VARCHAR", 10)
    with pytest.raises(IndexLoadError, match="VARCHAR limit"):
        write_store(tiny_index, parse_store_uri(uri), replace=True)
    assert _collections(uri) == names
    assert open_milvus_retriever(uri).retrieve(QUERIES[0], 3)


def test_interrupted_write_keeps_the_old_store_and_leaves_nothing_behind(
    tiny_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.stores.milvus import store as store_mod

    uri = _fresh_store(tiny_index, tmp_path / "kb.db")
    names = _collections(uri)

    def interrupted(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(store_mod, "_write_chunks", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_store(tiny_index, parse_store_uri(uri), replace=True)
    assert _collections(uri) == names  # no kb__*__writing left, the old set intact
    assert open_milvus_retriever(uri).retrieve(QUERIES[0], 3)
    monkeypatch.undo()
    assert write_store(tiny_index, parse_store_uri(uri), replace=True) == {"coverage": 12}
    assert _collections(uri) == names


def test_store_interrupted_during_the_swap_says_so(tiny_index: Path, tmp_path: Path) -> None:
    from kbqa.stores.milvus.uri import connect

    uri = _fresh_store(tiny_index, tmp_path / "kb.db")
    client = connect(parse_store_uri(uri))
    client.drop_collection("kb__meta")  # where the swap starts: the meta collection goes first
    client.close()
    with pytest.raises(
        IndexLoadError, match=r"incomplete.*a write was interrupted; write it again"
    ):
        open_milvus_retriever(uri)
    write_store(tiny_index, parse_store_uri(uri), replace=True)
    assert open_milvus_retriever(uri).retrieve(QUERIES[0], 3)


def test_a_file_that_is_not_a_lite_store_is_named_and_left_alone(
    tiny_index: Path, kb_file: Path, tmp_path: Path
) -> None:
    path = tmp_path / "notmilvus.db"
    path.write_text("hello\n")
    uri = f"milvus://{path}"
    runner = CliRunner()
    result = runner.invoke(app, ["ask", "q", "--index", uri, "--model", "fake/script:X"])
    assert result.exit_code == 2 and "is not a Milvus Lite store" in result.output, result.output
    result = runner.invoke(app, ["index", "--out", str(tiny_index), "--store", uri])
    assert result.exit_code == 2 and "is not a Milvus Lite store" in result.output, result.output
    out = tmp_path / "idx"
    args = ["index", str(kb_file), "--out", str(out), "--embedder", "fake/hash", "--store", uri]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "is not a Milvus Lite store" in result.output, result.output
    assert not out.exists()  # refused before the build
    assert path.read_text() == "hello\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.jsonl", "notmilvus.db"]


def test_unwritable_folder_is_named_before_building(
    kb_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "probe").touch()
    except OSError:
        pass
    else:  # root writes a read-only folder: refuse the probe as a read-only mount would
        (folder / "probe").unlink()

        def read_only(*args: object, **kwargs: object) -> None:
            raise PermissionError(13, "Permission denied")

        monkeypatch.setattr("kbqa.paths.tempfile.TemporaryFile", read_only)
    try:
        out = tmp_path / "idx"
        args = ["index", str(kb_file), "--out", str(out), "--embedder", "fake/hash"]
        result = CliRunner().invoke(app, [*args, "--store", f"milvus://{folder / 'kb.db'}"])
        assert result.exit_code == 2, result.output
        assert f"folder {folder} is not writable (Permission denied)" in result.output
        assert not out.exists() and not (folder / "kb.db").exists()
    finally:
        folder.chmod(0o755)


def test_lite_open_failure_is_an_index_load_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pymilvus
    from pymilvus.exceptions import ConnectionConfigException

    from kbqa.stores.milvus.uri import connect

    def refuse(**kwargs: object) -> None:
        raise ConnectionConfigException(message="Open local milvus failed")

    monkeypatch.setattr(pymilvus, "MilvusClient", refuse)
    with pytest.raises(IndexLoadError, match=r"cannot open the Milvus Lite store .*kb\.db"):
        connect(parse_store_uri(f"milvus://{tmp_path / 'kb.db'}"), create=True)


def test_a_lite_store_open_elsewhere_is_one_line_without_milvus_lites_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 34 item 11: a second process opening a Lite store got Milvus Lite's traceback
    before kbqa's error."""
    import logging

    import pymilvus
    from pymilvus.exceptions import ConnectionConfigException

    from kbqa.stores.milvus.uri import connect

    def locked(**kwargs: object) -> None:  # what milvus-lite 3.2 does, logged then raised
        try:
            raise BlockingIOError(11, "another process holds the lock on 'kb.db'")
        except BlockingIOError:
            logging.getLogger("milvus_lite.server_manager").exception("Failed to start")
        raise ConnectionConfigException(message="Open local milvus failed")

    monkeypatch.setattr(pymilvus, "MilvusClient", locked)
    with caplog.at_level("DEBUG"), pytest.raises(IndexLoadError, match="open in another process"):
        connect(parse_store_uri(f"milvus://{tmp_path / 'kb.db'}"), create=True)
    assert not [r for r in caplog.records if r.name.startswith("milvus_lite")], caplog.text


def test_a_second_writer_of_a_lite_store_is_refused_before_it_opens_it(
    tiny_index: Path, tmp_path: Path
) -> None:
    """Issue 34 item 11: two writers of a new Lite store both got in and collided."""
    from kbqa.stores.milvus.uri import lite_writer_lock

    store = parse_store_uri(f"milvus://{tmp_path / 'kb.db'}")
    with lite_writer_lock(store), pytest.raises(IndexLoadError, match=r"is writing .* right now"):
        write_store(tiny_index, store)
    assert not (tmp_path / "kb.db").exists()  # refused before Milvus Lite made the store
    assert write_store(tiny_index, store) == {"coverage": 12}  # released
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.db"]  # no lock file left


def test_an_interrupted_store_write_says_so(
    tiny_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34 item 11: an interrupted Milvus write exited 130 without a word."""
    from kbqa.stores import milvus

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(milvus, "write_store", interrupted)
    uri = f"milvus://{tmp_path / 'kb.db'}"
    result = CliRunner().invoke(app, ["index", "--out", str(tiny_index), "--store", uri])
    assert result.exit_code == 130
    assert f"interrupted: {uri} is as it was" in result.output


def test_an_out_that_is_a_uri_is_refused_without_a_folder_made(
    kb_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    uri = f"milvus://{tmp_path / 'kb.db'}"
    result = CliRunner().invoke(app, ["index", str(kb_file), "--out", uri])
    assert result.exit_code == 2 and f"--store {uri}" in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.jsonl"]


def test_lite_write_logs_no_grpc_error(
    tiny_index: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING"):
        write_store(tiny_index, parse_store_uri(f"milvus://{tmp_path / 'kb.db'}"))
    assert not [r for r in caplog.records if r.name.startswith("grpc")], caplog.text


def test_cli_bad_store_fails_before_building(kb_file: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["index", str(kb_file), "--out", str(tmp_path / "idx"), "--store", "milvus://nowhere"]
    )
    assert result.exit_code != 0 and "ends in .db" in result.output
    assert not (tmp_path / "idx").exists()


def test_langchain_retriever_reads_a_store_like_a_directory(
    tiny_index: Path, tiny_store: str
) -> None:
    from kbqa.langchain_retriever import KBQARetriever

    q = QUERIES[1]
    want = KBQARetriever(index_dir=tiny_index, k=3).invoke(q)
    got = KBQARetriever(index_dir=tiny_store, k=3).invoke(q)
    assert [d.metadata["chunk_id"] for d in got] == [d.metadata["chunk_id"] for d in want]
    assert [d.page_content for d in got] == [d.page_content for d in want]


def test_langchain_milvus_vectorstore_searches_with_kbqa_query_vectors(tiny_store: str) -> None:
    pytest.importorskip("langchain_milvus", reason="langchain-milvus is not installed")
    from pymilvus import Function, FunctionType

    from kbqa.stores.milvus.langchain import KbqaBM25QueryEmbedding, langchain_vectorstore

    store = langchain_vectorstore(tiny_store)
    weighted = Function(
        name="weighted",
        input_field_names=[],
        function_type=FunctionType.RERANK,
        params={"reranker": "weighted", "weights": [0.65, 0.35], "norm_score": True},
    )
    found = store.similarity_search_with_score(QUERIES[0], k=3, reranker=weighted)
    assert found and found[0][0].metadata["doc_id"] == "d1"  # ঢাকা
    assert found[0][0].page_content.startswith("ঢাকা বাংলাদেশের রাজধানী")
    with pytest.raises(NotImplementedError, match="built index"):
        KbqaBM25QueryEmbedding(open_milvus_retriever(tiny_store)).embed_documents(["x"])


@pytest.mark.integration
def test_real_bangla_slice_same_top10_on_200_questions(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """200 BanglaRQA validation questions (seed 0) over the pages they ask about, indexed with
    BM25 and the real e5 embedder, both strategies: Milvus Lite returns the in-process top-10
    (weighted fusion, kbqa fuses), the same padded top-3 and the same precision top-10."""
    import random

    from conftest import data_dir

    from kbqa.corpus.loaders import load_documents
    from kbqa.embedders import load_embedder
    from kbqa.evals.datasets import load_questions
    from kbqa.index import StrategyInput, build_indexes

    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    questions = random.Random(0).sample(
        load_questions(data / "bn" / "banglarqa_validation.qa.jsonl"), 200
    )
    pages = {q.doc_id for q in questions}
    docs = [
        d
        for d in load_documents(data / "bn" / "bnwiki_kb.jsonl", skip_bad_lines=True)
        if d.doc_id in pages
    ]
    root = tmp_path_factory.mktemp("real-milvus")
    parts = {"coverage": StrategyInput(docs, 800, 150), "precision": StrategyInput(docs, 1000, 150)}
    build_indexes(parts, root / "index", load_embedder("e5"), progress=False)
    uri = f"milvus://{root / 'real.db'}#real"
    write_store(root / "index", parse_store_uri(uri))
    for strategy in ("coverage", "precision"):
        local = load_retriever(str(root / "index"), "", strategy)
        remote = open_milvus_retriever(uri, strategy=strategy)
        differ = [
            q.question
            for q in questions
            if [h.chunk_id for h in remote.retrieve(q.question, 10, pad_previous=False)]
            != [h.chunk_id for h in local.retrieve(q.question, 10, pad_previous=False)]
        ]
        assert not differ, (strategy, differ[:5])
    padded = [  # the precision sub-index's padded top-3 (the last pair opened)
        [(c.chunk_id, c.rank, c.is_padding) for c in r.retrieve(q.question, 3)]
        for q in questions[:50]
        for r in (local, remote)
    ]
    assert padded[0::2] == padded[1::2]


def test_reading_a_lite_store_in_a_read_only_folder_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.stores.milvus.uri import check_lite_path, parse_store_uri

    store = parse_store_uri(f"milvus://{tmp_path / 'kb.db'}")
    (tmp_path / "kb.db").mkdir()
    check_lite_path(store, create=False)  # writable: no complaint

    def read_only(*args: object, **kwargs: object) -> None:
        raise PermissionError(30, "Read-only file system")

    # Milvus Lite writes its LOCK file in the store even to read it; a read-only mount refuses
    # that (root included) with a traceback from milvus_lite, unless kbqa says so first
    monkeypatch.setattr("kbqa.paths.tempfile.TemporaryFile", read_only)
    with pytest.raises(IndexLoadError, match="not writable \\(Read-only file system\\); Milvus"):
        check_lite_path(store, create=False)
