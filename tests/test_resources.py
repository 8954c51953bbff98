"""Issue 35 item 1: a run's parts handed in as objects (``Context(resources=Resources(...))``)
instead of patched loaders: the graph reads with the reader, searches with the web search and
retrieves with the retriever it is given, and a handed-in knowledge base is never mixed with
the index directory's."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa.context import Context
from kbqa.errors import IndexLoadError
from kbqa.graph import graph
from kbqa.llm.fake import ScriptedChatModel
from kbqa.resources import Resources, chat_model_for, retriever_for, web_search_for
from kbqa.web_search import StaticWebSearch


def test_the_graph_runs_on_the_parts_it_is_handed(tiny_index: Path) -> None:
    reader = ScriptedChatModel.from_name("fake/script:বুড়িগঙ্গা#handed-in")
    web = StaticWebSearch([{"title": "t", "url": "http://127.0.0.1/x", "snippet": "ঢাকা"}])
    loaded = retriever_for(Context(index_dir=str(tiny_index), embedder="fake/hash"))
    ctx = Context(index_dir="no-such-index", model="gemma3-270m", web_search="off",
                  resources=Resources(retriever=loaded, reader=reader, web_search=web))  # fmt: skip
    assert chat_model_for(ctx) is reader and web_search_for(ctx) is web
    out = graph.invoke({"question": "ঢাকা কোন নদীর তীরে অবস্থিত?"}, context=ctx)
    assert out["answer"] == "বুড়িগঙ্গা" and out["answered_by"] in ("generate", "cross_check")
    assert out["sources"] and out["sources"][0]["doc_id"]  # from the handed-in retriever
    with pytest.raises(IndexLoadError, match="hand in precision_retriever too"):
        retriever_for(ctx, "precision")
    # a break-it trial: wrong objects were accepted and failed, or were ignored, mid-run
    with pytest.raises(ValueError, match=r"resources must be a kbqa\.resources\.Resources"):
        Context(resources={"reader": reader})
    for part, bad, wanted in [
        ("retriever", "x", "a retriever object"),
        ("reranker", object(), "a reranker"),
        ("reader", 42, "a chat model"),
        ("verifier", "x", "a chat model"),
        ("web_search", "x", "a web search"),
    ]:
        with pytest.raises(ValueError, match=f"resources.{part} must be {wanted}"):
            Context(resources=Resources(**{part: bad}))


def test_nothing_handed_in_loads_from_the_settings(tiny_index: Path) -> None:
    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", web_search="off")
    assert retriever_for(ctx) is retriever_for(Context(index_dir=str(tiny_index),
                                                       embedder="fake/hash"))  # fmt: skip
    assert web_search_for(ctx) is None


def test_english_questions_go_to_their_own_reader(tiny_index: Path) -> None:
    """Issue 32 part 7: ``model_en`` (and ``reader_adapter_en``) read the questions classify
    finds English; Bangla ones keep ``model``."""
    base = {"index_dir": str(tiny_index), "embedder": "fake/hash", "web_search": "off"}
    ctx = Context(**base, model="fake/script:বুড়িগঙ্গা#bn-route",
                  model_en="fake/script:Seine#en-route", cross_check="off")  # fmt: skip
    assert ctx.reader_for("en") == ("fake/script:Seine#en-route", "")
    assert ctx.reader_for("bn") == ctx.reader_for(None) == ("fake/script:বুড়িগঙ্গা#bn-route", "")
    assert chat_model_for(ctx, "en") is not chat_model_for(ctx, "bn")
    assert ctx.readers_said() == (
        "model fake/script:বুড়িগঙ্গা#bn-route (English: fake/script:Seine#en-route)"
    )
    english = graph.invoke({"question": "On which river does Paris lie?"}, context=ctx)
    bangla = graph.invoke({"question": "ঢাকা কোন নদীর তীরে অবস্থিত?"}, context=ctx)
    assert (english["language"], english["answer"]) == ("en", "Seine")
    assert (bangla["language"], bangla["answer"]) == ("bn", "বুড়িগঙ্গা")
    # without an English setting, both languages read with the one reader
    plain = Context(**base, model="fake/script:Seine#one-reader")
    assert plain.reader_for("en") == plain.reader_for("bn")
    assert plain.readers_said() == "model fake/script:Seine#one-reader"
    assert chat_model_for(plain, "en") is chat_model_for(plain, "bn")
    # an English adapter alone reads English with the same base and that adapter
    default = Context(**base).model
    assert Context(**base, reader_adapter_en="ad/en").reader_for("en") == (default, "ad/en")
    assert Context(**base, reader_adapter="ad/bn").reader_for("en") == (default, "ad/bn")
    with pytest.raises(ValueError, match="a llm_url server serves one model"):
        Context(**base, llm_url="http://127.0.0.1:1/v1", model_en="qwen2.5-coder-1.5b")
    handed = Resources(reader=ScriptedChatModel.from_name("fake/abstain"))
    with pytest.raises(ValueError, match="cannot go with a handed-in reader"):
        Context(**base, resources=handed, reader_adapter_en="ad/en")
    with pytest.raises(ValueError, match="use_llm is off"):
        Context(**base, use_llm=False, model_en="qwen2.5-coder-1.5b")


def test_an_english_reader_that_cannot_load_is_an_error(tiny_index: Path) -> None:
    from kbqa.errors import ModelError
    from kbqa.resources import check_models

    ctx = Context(index_dir=str(tiny_index), embedder="fake/hash", model="fake/abstain",
                  model_en="no-such-model")  # fmt: skip
    with pytest.raises(ModelError, match="no-such-model"):
        check_models(ctx)
