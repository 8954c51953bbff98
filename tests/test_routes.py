"""Every route of the full decision graph, with scripted fake LLMs and a stand-in web search.

Each test asserts the exact route. A scripted model answers its calls in order (generate,
retry's generate, verify, fallback, web), so the script spells out what every stage says.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from kbqa.context import MAX_RETRIES, Context
from kbqa.graph import graph
from kbqa.prompts import ABSTENTION_PHRASE as ABST
from kbqa.prompts import ABSTENTION_PHRASE_EN as ABST_EN
from kbqa.web_search import (
    DDGSWebSearch,
    StaticWebSearch,
    WebResult,
    WebSearchError,
    register_web_search,
)

HEAD = ["classify", "retrieve", "generate", "check_abstention"]
RETRY = ["retry", "generate", "check_abstention"]
QUESTION = "বাংলাদেশের রাজধানী কোথায়?"

register_web_search("test-down", StaticWebSearch([], fail="no network"))
register_web_search(
    "test-web",
    StaticWebSearch(
        [
            WebResult(
                title="Dhaka - Wikipedia",
                url="https://en.wikipedia.org/wiki/Dhaka",
                snippet="রাজধানী ঢাকা।",
            )
        ]
    ),
)
_n = 0


def script(*answers: str) -> str:
    """A fresh scripted model (models are cached by name) answering ``answers`` in turn."""
    global _n
    _n += 1
    return f"fake/script:{'|'.join(answers)}#{_n}"


def run(index: Path, model: str, **kw: object) -> dict:
    """The graph on ``QUESTION``; the cross-check is off unless a test turns it on, so each
    test's script spells out the other stages (the cross-check's tests are below)."""
    settings: dict[str, object] = {"web_search": "test-down", "cross_check": "off", "verify": True,
                                   "max_retries": 1, "fallback": True,
                                   "reading": "joint"}  # fmt: skip
    ctx = Context(index_dir=str(index), embedder="fake/hash", model=model, **settings | kw)  # type: ignore[arg-type]
    return dict(graph.invoke({"question": QUESTION}, context=ctx))


def test_answer_first_time(both_index: Path) -> None:
    out = run(both_index, script("ঢাকা", "ঢাকা"))
    assert out["route"] == [*HEAD, "verify", "finalize"]
    assert (out["answer"], out["answered_by"], out["verify_changed"]) == ("ঢাকা", "generate", False)
    assert out["sources"][0]["doc_id"] == "d1"


def test_verifier_correction_is_recorded(both_index: Path) -> None:
    out = run(both_index, script("বুড়িগঙ্গা", "ঢাকা"))
    assert out["route"] == [*HEAD, "verify", "finalize"]
    assert (out["answer"], out["answered_by"], out["verify_changed"]) == ("ঢাকা", "verify", True)
    assert [s["stage"] for s in out["stage_answers"]] == ["generate", "verify"]


def test_an_ungrounded_correction_is_refused(both_index: Path) -> None:
    out = run(both_index, script("ঢাকা", "কলকাতা শহর"))  # the verifier's answer is in no passage
    assert out["route"] == [*HEAD, "verify", "verify: ungrounded", "finalize"]
    assert (out["answer"], out["answered_by"], out["verify_changed"]) == ("ঢাকা", "generate", False)
    assert out["verified_answer"] == "কলকাতা শহর"


def test_the_verifier_prompt_is_budgeted_in_the_verifiers_tokens(both_index: Path) -> None:
    # the reader fills its window with passages; the verifier's prompt is longer (its instruction,
    # the candidate), so the same passages would overflow it ("Requested tokens ... exceed")
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", n_ctx=260, web_search="off",
                  model=script("এখানে কিছু তথ্য", "এখানে কিছু তথ্য"), cross_check="off",
                  verify=True)  # fmt: skip
    out = graph.invoke({"question": "বাক্য নম্বর ৫ এখানে কী তথ্য আছে?"}, context=ctx)
    assert out["context_chunk_ids"]
    assert out["route"] == [*HEAD, "verify", "finalize"], out.get("route")
    assert out["verified_answer"] == "এখানে কিছু তথ্য"


def test_abstain_then_retry_answers(both_index: Path) -> None:
    out = run(both_index, script(ABST, "ঢাকা", "ঢাকা"))
    assert out["route"] == [*HEAD, *RETRY, "verify", "finalize"]
    assert (out["answer"], out["answered_by"], out["retries"]) == ("ঢাকা", "retry", 1)


def test_abstain_twice_then_fallback_answers(both_index: Path) -> None:
    out = run(both_index, script(ABST, ABST, ABST, "ঢাকা"))
    assert out["route"] == [*HEAD, *RETRY, "verify", "fallback", "finalize"]
    assert (out["answer"], out["answered_by"], out["abstained"]) == ("ঢাকা", "fallback", False)
    assert out["fallback_answer"] == "ঢাকা"
    stages = [(s["stage"], s["abstained"]) for s in out["stage_answers"]]
    assert stages == [("generate", True), ("retry", True), ("verify", True), ("fallback", False)]


def test_everything_abstains_and_the_web_is_unavailable(both_index: Path) -> None:
    out = run(both_index, script(ABST))
    assert out["route"] == [
        *HEAD, *RETRY, "verify", "fallback", "web_search", "web: unavailable", "finalize"
    ]  # fmt: skip
    assert (out["answer"], out["abstained"]) == (ABST, True)
    assert out["web_error"] == "no network" and out["web_query"]


def test_web_search_answers_from_quoted_results(both_index: Path) -> None:
    out = run(both_index, script(ABST, ABST, ABST, ABST, "ঢাকা"), web_search="test-web")
    assert out["route"] == [*HEAD, *RETRY, "verify", "fallback", "web_search", "finalize"]
    assert (out["answer"], out["answered_by"]) == ("ঢাকা", "web_search")
    assert out["sources"] == [
        {"doc_id": "https://en.wikipedia.org/wiki/Dhaka", "title": "Dhaka - Wikipedia",
         "url": "https://en.wikipedia.org/wiki/Dhaka", "chunk_id": -1, "score": 0.0}
    ]  # fmt: skip


def test_a_web_answer_no_snippet_holds_is_not_taken(both_index: Path) -> None:
    out = run(both_index, script(ABST, ABST, ABST, ABST, "চট্টগ্রাম"), web_search="test-web")
    assert out["route"] == [
        *HEAD, *RETRY, "verify", "fallback", "web_search", "web: ungrounded", "finalize"
    ]  # fmt: skip
    assert (out["answer"], out["abstained"], out["answered_by"]) == (ABST, True, "abstained")
    assert out["stage_answers"][-1] == {"stage": "web_search", "answer": ABST, "abstained": True}


def test_web_search_is_off_unless_asked(both_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBQA_WEB_SEARCH", raising=False)
    assert Context().web_search == "off"
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(ABST),
                  cross_check="off")  # fmt: skip
    out = graph.invoke({"question": QUESTION}, context=ctx)
    assert "web_search" not in out["route"] and out["route"][-1] == "finalize"
    assert out["web_query"] == ""  # the question's words went nowhere


@pytest.mark.parametrize(
    ("question", "invented", "phrase"),
    [
        ("মঙ্গল গ্রহের প্রথম মেয়রের ফোন নম্বর কত?", "1000000000000000000000000000000", ABST),
        # an English question gets the English abstention
        ("What is the boiling point of mercury?", "1920°C", ABST_EN),
    ],
)
def test_an_answer_in_no_passage_is_not_an_answer(
    both_index: Path, question: str, invented: str, phrase: str
) -> None:
    # replies the untuned 270M reader gave to questions the knowledge base cannot answer
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(invented),
                  web_search="off", verify=False, cross_check="off")  # fmt: skip
    out = graph.invoke({"question": question}, context=ctx)
    assert out["route"][-2:] == ["finalize", "finalize: ungrounded"]
    assert (out["answer"], out["abstained"], out["answered_by"]) == (phrase, True, "abstained")
    assert out["raw_answer"] == invented


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("১৮৬১ সালে", "১৮৬১"),  # the passage's "১৮৬১ সালে": the year, without its year word
        # the passage has 1861 but not "১৮৬১ খ্রিস্টাব্দে": grounded before the word is dropped
        ("১৮৬১ খ্রিস্টাব্দে", ABST),
    ],
)
def test_a_year_loses_its_year_word_once_grounded(
    both_index: Path, reply: str, answer: str
) -> None:
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(reply),
                  web_search="off", verify=False, cross_check="off")  # fmt: skip
    out = graph.invoke({"question": "রবীন্দ্রনাথ ঠাকুর কত সালে জন্মগ্রহণ করেন?"}, context=ctx)
    assert out["answer"] == answer, out["route"]
    assert out["abstained"] == (answer == ABST)


def test_fallback_records_the_chunks_it_read(both_index: Path) -> None:
    from kbqa.resources import retriever_for

    out = run(both_index, script(ABST, ABST, ABST, "ঢাকা"))
    assert out["answered_by"] == "fallback" and out["context_index"] == "precision"
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", web_search="off")
    precision = retriever_for(ctx, "precision").chunks
    cited = [s["chunk_id"] for s in out["sources"]]
    assert cited and set(cited) <= set(out["context_chunk_ids"])
    assert any("ঢাকা" in precision[c].text for c in out["context_chunk_ids"])
    # a new question starts from the primary index again
    plain = Context(index_dir=str(both_index), embedder="fake/hash", model=script("ঢাকা"),
                    web_search="off", verify=False, cross_check="off")  # fmt: skip
    again = graph.invoke({"question": QUESTION, **out}, context=plain)
    assert again["context_index"] == "" and again["answered_by"] == "generate"


def test_an_index_without_precision_part_skips_the_fallback(tiny_index: Path) -> None:
    out = run(tiny_index, script(ABST))
    assert out["route"] == [
        *HEAD, *RETRY, "verify", "fallback", "fallback: unavailable", "web_search",
        "web: unavailable", "finalize",
    ]  # fmt: skip


def test_llm_unavailable_uses_the_extractor(both_index: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.gguf")
    out = run(both_index, missing)
    assert out["route"] == ["classify", "retrieve", "extract", "finalize"]
    assert out["answered_by"] == "extract" and not out["abstained"]
    off = run(both_index, "fake/abstain", use_llm=False)
    assert off["route"] == ["classify", "retrieve", "extract", "finalize"]


def test_the_cross_check_keeps_an_answer_from_the_questions_sentence(both_index: Path) -> None:
    # the extractor's span is "বৃহত্তম শহর" from "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর।"
    out = run(both_index, script("ঢাকা", "ঢাকা"), cross_check="auto", cross_check_rules="all")
    assert out["route"] == [*HEAD, "cross_check", "cross_check: agrees", "verify", "finalize"]
    assert (out["answer"], out["answered_by"]) == ("ঢাকা", "generate")
    assert [s["stage"] for s in out["stage_answers"]] == ["generate", "cross_check", "verify"]


def test_the_cross_check_replaces_an_answer_read_elsewhere(both_index: Path) -> None:
    # "বুড়িগঙ্গা" is in the context, but not in the sentence the question points at
    out = run(
        both_index, script("বুড়িগঙ্গা", "বৃহত্তম শহর"), cross_check="auto", cross_check_rules="all"
    )
    assert out["route"] == [*HEAD, "cross_check", "cross_check: extractor", "verify", "finalize"]
    assert (out["answer"], out["answered_by"]) == ("বৃহত্তম শহর", "cross_check")
    changes = [(s["stage"], s["answer"]) for s in out["stage_answers"]]
    assert changes == [
        ("generate", "বুড়িগঙ্গা"), ("cross_check", "বৃহত্তম শহর"), ("verify", "বৃহত্তম শহর")
    ]  # fmt: skip


def test_the_cross_check_leaves_english_alone_unless_on(both_index: Path) -> None:
    ctx = {"index_dir": str(both_index), "embedder": "fake/hash", "web_search": "off",
           "verify": False}  # fmt: skip
    question = {"question": "What is Paris the capital of?"}
    # "Seine" is in the context, not in the sentence the question points at
    auto = graph.invoke(question, context=Context(**ctx, model=script("Seine")))
    assert auto["route"] == [*HEAD, "cross_check", "cross_check: skipped (en)", "finalize"]
    assert auto["answer"] == "Seine"
    on = graph.invoke(
        question,
        context=Context(**ctx, model=script("Seine"), cross_check="on", cross_check_rules="all"),
    )
    assert on["route"][4:6] == ["cross_check", "cross_check: extractor"]
    assert on["answer"] == "France" and on["answered_by"] == "cross_check"


def test_the_cross_check_answers_an_abstention_its_context_answers(both_index: Path) -> None:
    # the question's two content words are both in "ঢাকা বাংলাদেশের রাজধানী ও বৃহত্তম শহর।"
    out = run(
        both_index,
        script(ABST, ABST),
        cross_check="auto",
        cross_check_rules="all",
        fallback=False,
        verify=False,
    )
    assert out["route"] == [
        *HEAD, *RETRY, "cross_check", "cross_check: answered", "finalize"
    ]  # fmt: skip
    assert (out["answer"], out["answered_by"], out["abstained"]) == (
        "বৃহত্তম শহর", "cross_check", False
    )  # fmt: skip
    assert [s["doc_id"] for s in out["sources"]] == ["d1"] and out["question_coverage"] == 1.0
    with pytest.raises(ValueError, match="cross_check must be auto, on or off, got 'yes'"):
        Context(cross_check="yes")  # type: ignore[arg-type]


def test_a_kept_answer_records_the_extractors_span_it_disagreed_with(both_index: Path) -> None:
    """A new user saw ``cross_check: disagrees, kept`` and no way to see the other answer."""
    out = run(both_index, script("বুড়িগঙ্গা নদীর তীরে"), cross_check="auto",
              cross_check_rules="none", fallback=False, verify=False)  # fmt: skip
    assert "cross_check: disagrees, kept" in out["route"], out["route"]
    assert out["answer"] == "বুড়িগঙ্গা নদীর তীরে"
    assert out["extracted_answer"] == "বৃহত্তম শহর"


UNSUPPORTED = "মঙ্গল গ্রহের প্রথম মেয়রের নাম কী?"
"""No word of it is in the test knowledge base."""


def test_the_cross_check_keeps_an_abstention_its_context_does_not_answer(
    both_index: Path,
) -> None:
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(ABST, ABST),
                  web_search="test-down", max_retries=1)  # fmt: skip
    out = graph.invoke({"question": UNSUPPORTED}, context=ctx)
    assert out["route"] == [*HEAD, *RETRY, "cross_check", "cross_check: kept abstention",
                            "web_search", "web: unavailable", "finalize"]  # fmt: skip
    assert out["abstained"] and out["answer"] == ABST


def test_the_cross_check_turns_an_unsupported_answer_into_an_abstention(
    both_index: Path,
) -> None:
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script("ঢাকা"),
                  web_search="test-down", fallback=False, cross_check_rules="all")  # fmt: skip
    out = graph.invoke({"question": UNSUPPORTED}, context=ctx)
    assert out["route"] == [*HEAD, "cross_check", "cross_check: abstained",
                            "web_search", "web: unavailable", "finalize"]  # fmt: skip
    assert out["abstained"] and out["answer"] == ABST and out["question_coverage"] == 0.0
    assert [(s["stage"], s["abstained"]) for s in out["stage_answers"]] == [
        ("generate", False), ("cross_check", True)
    ]  # fmt: skip


def test_switches_remove_their_nodes(both_index: Path) -> None:
    out = run(both_index, script(ABST), verify=False, fallback=False, web_search="off")
    assert out["route"] == [*HEAD, *RETRY, "finalize"]


def test_worst_case_route_is_far_below_the_recursion_limit(both_index: Path) -> None:
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(ABST),
                  max_retries=MAX_RETRIES, web_search="test-down", verify=True,
                  fallback=True)  # fmt: skip
    # a question the context does not support: the cross-check keeps the abstention
    out = graph.invoke({"question": UNSUPPORTED}, context=ctx, config={"recursion_limit": 25})
    nodes = [r for r in out["route"] if ": " not in r]
    assert out["retries"] == MAX_RETRIES
    assert len(nodes) == 2 + 3 * (MAX_RETRIES + 1) - 1 + 5 == 18  # far below 25
    with pytest.raises(ValueError, match="max_retries must be between 0 and 3"):
        Context(max_retries=MAX_RETRIES + 1)


def test_real_ddgs_fails_soft_within_its_time_limit(both_index: Path) -> None:
    """The real ddgs code path, through a local stand-in proxy that accepts and never answers
    (as a network that swallows packets would)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    pytest.importorskip("ddgs")
    proxy = f"http://127.0.0.1:{server.getsockname()[1]}"
    search = DDGSWebSearch(proxy=proxy)
    try:
        t0 = time.perf_counter()
        with pytest.raises(WebSearchError, match="no reply within 1 s"):
            search.search("Dhaka capital", 3, timeout=1.0)
        assert time.perf_counter() - t0 < 2.5
        t0 = time.perf_counter()
        with pytest.raises(WebSearchError, match="backing off"):  # no second wait
            search.search("Dhaka capital", 3, timeout=1.0)
        assert time.perf_counter() - t0 < 0.5
        register_web_search("test-ddgs-hang", DDGSWebSearch(proxy=proxy))
        t0 = time.perf_counter()
        out = run(both_index, script(ABST), web_search="test-ddgs-hang", web_timeout=1.0)
        assert out["route"][-3:] == ["web_search", "web: unavailable", "finalize"]
        assert out["abstained"] and out["web_error"]  # ddgs's own timeout or ours
        assert time.perf_counter() - t0 < 5
    finally:
        server.close()
        for conn in held:
            conn.close()


def test_a_second_question_on_the_same_thread_starts_clean(both_index: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from kbqa.graph import build_graph

    threaded = build_graph().copy(update={"checkpointer": InMemorySaver()})
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(ABST),
                  web_search="test-down")  # fmt: skip
    config = {"configurable": {"thread_id": "t1"}}
    first = threaded.invoke({"question": QUESTION}, config=config, context=ctx)
    second = threaded.invoke({"question": "ঢাকা কোথায়?"}, config=config, context=ctx)
    assert second["route"] == first["route"]  # fallback and web search ran again
    assert len(second["stage_answers"]) == len(first["stage_answers"])


def test_a_verifier_abstention_does_not_discard_an_answer(both_index: Path) -> None:
    out = run(both_index, script("ঢাকা", ABST))
    assert (out["answer"], out["answered_by"], out["verify_changed"]) == ("ঢাকা", "generate", False)


def test_a_failing_stage_keeps_the_answer_so_far(both_index: Path, tmp_path: Path) -> None:
    out = run(both_index, script("ঢাকা"), verifier_model=str(tmp_path / "missing.gguf"))
    assert out["route"] == [*HEAD, "verify", "verify: failed", "finalize"]
    assert out["answer"] == "ঢাকা"


def test_a_generator_failing_at_run_time_hands_over_to_the_extractor(both_index: Path) -> None:
    out = run(both_index, "fake/fail")
    assert out["route"] == ["classify", "retrieve", "generate", "extract", "finalize"]
    assert out["answered_by"] == "extract" and out["llm_error"].startswith("RuntimeError")
    assert out["sources"] and out["sources"][0]["chunk_id"] >= 0


def test_settings_are_checked_without_reading_a_file_and_paths_before_a_run(
    tmp_path: Path,
) -> None:
    """Issue 35 item 4: Context checks values only; the files it names are checked by
    check_paths, which preload and every command run before the first question."""
    ctx = Context(web_search=f"static:{tmp_path}/none.json", reranker=str(tmp_path / "rr"))
    with pytest.raises(ValueError, match=r"web_search 'static:.*none\.json': no such file"):
        ctx.check_paths()
    (tmp_path / "none.json").write_text("[]")
    with pytest.raises(ValueError, match=r"reranker must be one of .* no such directory"):
        ctx.check_paths()
    Context(web_search=f"static:{tmp_path}/none.json").check_paths()


def test_unknown_web_search_names_are_refused() -> None:
    with pytest.raises(
        ValueError, match=r"web_search \(\$KBQA_WEB_SEARCH, --web-search\) must be ddgs, off"
    ):
        Context(web_search="dgs")


def test_a_broken_precision_index_fails_the_fallback_softly(
    both_index: Path, tmp_path: Path
) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(both_index, broken)
    (broken / "precision" / "dense.faiss").write_bytes(b"garbage")
    out = run(broken, script(ABST))
    assert "fallback: failed" in out["route"] and out["abstained"]
    assert out["answered_by"] == "abstained"


def test_without_a_context_the_defaults_are_used() -> None:
    from types import SimpleNamespace

    from kbqa.context import context_of

    assert context_of(SimpleNamespace(context=None)) == Context()


def test_the_default_graph_neither_retries_nor_falls_back(both_index: Path) -> None:
    # Both lowered more answers than they raised on BanglaRQA validation (docs/finetune.md).
    ctx = Context(index_dir=str(both_index), embedder="fake/hash", model=script(ABST),
                  web_search="off")  # fmt: skip
    out = graph.invoke({"question": UNSUPPORTED}, context=ctx)
    assert out["route"] == [*HEAD, "cross_check", "cross_check: kept abstention", "finalize"]
    assert out["retries"] == 0 and out["abstained"]
