"""Graph behaviour with deterministic fake LLMs (no model file)."""

import os
from pathlib import Path

import pytest

from kbqa.context import Context
from kbqa.graph import build_graph, graph
from kbqa.llm.models import load_chat_model
from kbqa.prompts import ABSTENTION_PHRASE
from kbqa.retrieval.retriever import RetrievedChunk

SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.mmd"


def ctx(index: Path, model: str, **kw: object) -> Context:
    """The skeleton graph with one retry (no verify, fallback or web search) unless ``kw``
    switches them on; the hits read in one prompt, so a scripted reader answers once a
    reading."""
    settings: dict[str, object] = {"verify": False, "fallback": False, "web_search": "off",
                                   "max_retries": 1, "reading": "joint"}  # fmt: skip
    return Context(index_dir=str(index), embedder="fake/hash", model=model, **settings | kw)  # type: ignore[arg-type]


def test_always_abstaining_llm_retries_exactly_once(tiny_index: Path) -> None:
    model = "fake/script:" + ABSTENTION_PHRASE  # a fresh cached instance for this test
    # the cross-check would answer this abstention from the context (test_routes.py)
    out = graph.invoke({"question": "ঢাকা কোথায়?"}, context=ctx(tiny_index, model, cross_check="off"))
    assert out["answer"] == ABSTENTION_PHRASE
    assert out["abstained"] is True
    assert out["retries"] == 1
    assert out["route"] == [
        "classify",
        "retrieve",
        "generate",
        "check_abstention",
        "retry",
        "generate",
        "check_abstention",
        "finalize",
    ]
    assert load_chat_model(model, 4096, 0).calls == 2  # type: ignore[attr-defined]


def test_retry_uses_the_wider_pool(tiny_index: Path) -> None:
    out = graph.invoke(
        {"question": "ঢাকা কোথায়?"},
        context=ctx(tiny_index, "fake/abstain", k=1, retry_k=4, pad_previous=False),
    )
    assert len(out["retrieved"]) == 4


def test_retry_puts_the_passages_not_yet_read_first(tiny_index: Path) -> None:
    question = "বাংলাদেশের রাজধানী কোথায়?"
    first = graph.invoke(
        {"question": question}, context=ctx(tiny_index, "fake/abstain", k=2, max_retries=0,
                                            pad_previous=False, cross_check="off"),
    )  # fmt: skip
    read = first["context_chunk_ids"]
    assert len(read) == 2
    settings = {"k": 2, "retry_k": 5, "pad_previous": False, "cross_check": "off"}
    plain = graph.invoke(
        {"question": question},
        context=ctx(tiny_index, "fake/abstain", retry_unread_first=False, **settings),
    )
    assert [r["chunk_id"] for r in plain["retrieved"]][:2] == read  # HybridRAG-BN: same top
    out = graph.invoke({"question": question}, context=ctx(tiny_index, "fake/abstain", **settings))
    ids = [r["chunk_id"] for r in out["retrieved"]]
    assert sorted(ids) == sorted(r["chunk_id"] for r in plain["retrieved"])  # same pool
    assert ids[-2:] == read and not set(ids[:3]) & set(read)  # what was read goes last
    assert [r["rank"] for r in out["retrieved"]] == [1, 2, 3, 4, 5]


def test_unread_first_moves_a_hit_with_its_padding() -> None:
    from kbqa.nodes.retry import unread_first

    def rec(chunk_id: int, rank: int, padding: bool = False) -> dict[str, object]:
        return {"chunk_id": chunk_id, "doc_id": "d", "score": 1.0 / rank, "rank": rank,
                "is_padding": padding}  # fmt: skip

    records = [rec(9, 1, True), rec(10, 1), rec(4, 2), rec(6, 3, True), rec(7, 3), rec(1, 4)]
    out = unread_first(records, {9, 10, 6})  # 6 was read, its hit 7 was not
    assert [(r["chunk_id"], r["rank"], r["is_padding"]) for r in out] == [
        (4, 1, False), (6, 2, True), (7, 2, False), (1, 3, False), (9, 4, True), (10, 4, False),
    ]  # fmt: skip
    assert unread_first(records, set()) == records  # nothing read: the order is kept


def test_answer_after_retry_is_attributed_to_retry(tiny_index: Path) -> None:
    out = graph.invoke(
        {"question": "বাংলাদেশের রাজধানী কোথায়?"},
        context=ctx(tiny_index, "fake/script:তথ্য নেই|উত্তর: ঢাকা।"),
    )
    assert out["answer"] == "ঢাকা"
    assert out["abstained"] is False
    assert out["answered_by"] == "retry"
    assert out["route"].count("retry") == 1


def test_answer_first_time_with_sources(tiny_index: Path) -> None:
    out = graph.invoke(
        {"question": "বাংলাদেশের রাজধানী কোথায়?"}, context=ctx(tiny_index, "fake/script:ঢাকা")
    )
    assert out["answer"] == "ঢাকা"
    assert out["answered_by"] == "generate"
    assert out["route"] == [
        "classify", "retrieve", "generate", "check_abstention", "cross_check",
        "cross_check: agrees", "finalize",
    ]  # fmt: skip
    assert out["sources"][0]["doc_id"] == "d1"
    assert out["language"] == "bn" and out["question_type"] == "location"
    assert {t["node"] for t in out["timings"]} == {r for r in out["route"] if ": " not in r}


def test_no_retry_when_max_retries_is_zero(tiny_index: Path) -> None:
    out = graph.invoke({"question": "x?"}, context=ctx(tiny_index, "fake/abstain", max_retries=0))
    assert "retry" not in out["route"] and out["abstained"]


def test_empty_question_is_rejected(tiny_index: Path) -> None:
    with pytest.raises(ValueError, match="question is empty"):
        graph.invoke({"question": "   "}, context=ctx(tiny_index, "fake/abstain"))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", 0),
        ("retry_k", -1),
        ("n_ctx", 0),
        ("bm25_weight", -0.1),
        ("max_retries", -1),
        # values a typed field would refuse, and values outside every sensible range
        ("bm25_weight", float("nan")),
        ("dense_weight", float("inf")),
        ("k", True),
        ("max_retries", 1.5),
        ("n_threads", -3),
        ("use_llm", "false"),
        ("n_ctx", 2**32),
        ("abstention_phrase", "  "),
        ("web_timeout", float("nan")),
    ],
)
def test_context_validates(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        Context(**{field: value})  # type: ignore[arg-type]


def test_graph_shape_snapshot() -> None:
    mermaid = build_graph().get_graph().draw_mermaid()
    if os.environ.get("KBQA_UPDATE_SNAPSHOTS") == "1":  # review the change in the diff
        SNAPSHOT.write_text(mermaid)
    assert mermaid == SNAPSHOT.read_text()


def test_input_and_output_schemas() -> None:
    assert set(graph.get_input_jsonschema()["properties"]) == {"question"}
    out = set(graph.get_output_jsonschema()["properties"])
    assert {
        "answer",
        "abstained",
        "sources",
        "route",
        "retries",
        "answered_by",
        "retrieved",
        "context_chunk_ids",
        "timings",
    } <= out


def test_messages_stream_mode_sees_the_llm_call(tiny_index: Path) -> None:
    seen = []
    for message, metadata in graph.stream(
        {"question": "বাংলাদেশের রাজধানী কোথায়?"},
        context=ctx(tiny_index, "fake/script:ঢাকা"),
        stream_mode="messages",
    ):
        seen.append((metadata["langgraph_node"], message.content))
    assert ("generate", "ঢাকা") in seen


class StandInRetriever:
    """A retriever handed to the graph through ``Context.retriever``: two chunks in memory, no
    index on disk, nothing registered by name."""

    mode = "bm25"

    def __init__(self) -> None:
        from kbqa.corpus.chunking import Chunk

        self.chunks = [
            Chunk(0, "d1", 0, -1, "ঢাকা", "", "ঢাকা বাংলাদেশের রাজধানী।"),
            Chunk(1, "d2", 0, -1, "পদ্মা", "", "পদ্মা একটি নদী।"),
        ]
        self.queries: list[tuple[str, int]] = []

    def retrieve(self, query: str, k: int, **_: object) -> list[object]:
        from kbqa.retrieval.retriever import RetrievedChunk

        self.queries.append((query, k))
        return [RetrievedChunk(0, 1.0, 1), RetrievedChunk(1, 0.5, 2)][:k]


def test_a_retriever_handed_in_through_the_context_is_the_one_used(tmp_path: Path) -> None:
    stand_in = StandInRetriever()
    context = ctx(tmp_path / "no-index-here", "fake/script:ঢাকা#stand-in", retriever=stand_in)
    out = graph.invoke({"question": "বাংলাদেশের রাজধানী কোথায়?"}, context=context)
    assert stand_in.queries == [("বাংলাদেশের রাজধানী কোথায়?", 3)]
    assert out["answer"] == "ঢাকা" and out["retrieval_mode"] == "bm25"
    assert [s["doc_id"] for s in out["sources"]] == ["d1", "d2"]  # the chunks it read
    assert "retriever" not in context.settings()  # the run's config.json records settings only
    reranked = ctx(tmp_path / "no-index-here", "fake/script:ঢাকা#stand-in-2",
                   retriever=stand_in, reranker="lexical", rerank_pool=3)  # fmt: skip
    out = graph.invoke({"question": "বাংলাদেশের রাজধানী কোথায়?"}, context=reranked)
    assert out["retrieval_mode"] == "bm25 + rerank (lexical)"  # --json says a reranker ran


def test_a_retriever_that_is_not_one_is_refused_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="retriever must be a retriever object"):
        ctx(tmp_path, "fake/abstain", retriever="index/bnwiki")


def test_a_retriever_returning_a_chunk_it_does_not_hold_is_an_error(tmp_path: Path) -> None:
    stand_in = StandInRetriever()
    stand_in.retrieve = lambda query, k, **_: [RetrievedChunk(7, 1.0, 1)]  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="chunk id 7, but its chunks are numbered 0 to 1"):
        graph.invoke({"question": "ঢাকা?"}, context=ctx(tmp_path, "fake/abstain", retriever=stand_in))


def test_nothing_retrieved_means_no_reader_call_and_an_abstention(tmp_path: Path) -> None:
    stand_in = StandInRetriever()
    stand_in.retrieve = lambda query, k, **_: []  # type: ignore[method-assign]
    context = ctx(tmp_path, "fake/script:invented#empty", retriever=stand_in, fallback=True)
    out = graph.invoke({"question": "???"}, context=context)
    assert out["abstained"] and "generate: no context" in out["route"]
    assert "fallback: unavailable" in out["route"]  # a retriever handed in has no precision part
