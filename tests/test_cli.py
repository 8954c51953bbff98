"""The command line: bad input gives a clear error and exit code 2; nothing half-written."""

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbqa.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def run_fake(
    command: str, target: str, index: Path, *extra: str, model: str = "fake/abstain"
) -> tuple[int, str]:
    """``kbqa ask|eval TARGET`` on ``index`` with the fake embedder and a fake LLM."""
    return run(
        command, target, "--index", str(index), "--embedder", "fake/hash", "--model", model, *extra
    )


def test_index_ask_eval_with_fakes(kb_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--embedder", "fake/hash")
    assert code == 0, text
    assert "documents      5" in text and "peak RSS" in text
    times = dict(re.findall(r"^time (\w\S*)\s+(\d+\.\d) s(?!  \(part of)", text, flags=re.M))
    total = float(times.pop("total"))
    assert {"load+chunk", "bm25", "dense", "write", "other"} <= set(times), text
    assert sum(map(float, times.values())) == pytest.approx(total, abs=0.05 * len(times)), text
    code, text = run_fake("ask", "বাংলাদেশের রাজধানী কোথায়?", out, model="fake/script:ঢাকা")
    assert code == 0, text
    assert "answer: ঢাকা" in text and "route: classify -> retrieve" in text and "[1] ঢাকা" in text
    code, text = run_fake("ask", "বাংলাদেশের রাজধানী কোথায়?", out, "--verbose",
                          model="fake/script:ঢাকা")  # fmt: skip
    assert code == 0 and "timings:" in text
    assert "reader:" not in text  # one reader for every language: not named
    for question, reader in (
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:ঢাকা"),
        ("What is the capital of Bangladesh?", "fake/script:Dhaka"),
    ):
        code, said = run_fake("ask", question, out, "--model-en", "fake/script:Dhaka",
                              model="fake/script:ঢাকা")  # fmt: skip
        assert code == 0 and f"reader: {reader}\n" in said, said
    assert re.search(r"^  retrieve\s+\d+\.\d{3} s$", text, flags=re.M), text
    qa = tmp_path / "qa.jsonl"
    qa.write_text(
        json.dumps(
            {
                "qid": "1",
                "question": "বাংলাদেশের রাজধানী কোথায়?",
                "answers": ["ঢাকা"],
                "doc_id": "d1",
                "answerable": True,
            },
            ensure_ascii=False,
        )
        + "\n"
    )
    run_dir = tmp_path / "run"
    code, text = run_fake("eval", str(qa), out, "--out", str(run_dir), model="fake/script:ঢাকা")
    assert code == 0, text
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["exact_match"] == 1.0 and summary["recall@1"] == 1.0
    assert (run_dir / "report.md").is_file() and (run_dir / "plots" / "recall_at_k.png").is_file()


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question(tiny_index: Path, question: str) -> None:
    code, text = run("ask", question, "--index", str(tiny_index), "--embedder", "fake/hash")
    assert code == 2 and "question is empty" in text


def test_missing_index(tmp_path: Path) -> None:
    code, text = run("ask", "q?", "--index", str(tmp_path / "none"))
    assert code == 2 and "index not found" in text


def test_index_built_by_another_embedder(tiny_index: Path) -> None:
    code, text = run(
        "ask", "q?", "--index", str(tiny_index), "--model", "fake/abstain", "--embedder", "e5"
    )
    assert code == 2 and "built with embedder 'fake/hash'" in text
    # without --embedder, the index's own embedder is used
    code, text = run("ask", "q?", "--index", str(tiny_index), "--model", "fake/abstain")
    assert code == 0, text


def test_ask_says_web_search_is_off_when_a_question_ends_unanswered(both_index: Path) -> None:
    result = runner.invoke(app, ["ask", "মঙ্গল গ্রহের প্রথম মেয়রের ফোন নম্বর কত?", "--index",
                                 str(both_index), "--model", "fake/abstain", "--embedder",
                                 "fake/hash"])  # fmt: skip
    assert "abstained: true" in result.stdout
    assert result.exit_code == 0, result.output
    assert "web search is off" in result.stderr and "--web-search ddgs" in result.stderr
    assert "web search is off" not in result.stdout and "web_search" not in result.stdout
    answered = runner.invoke(app, ["ask", "বাংলাদেশের রাজধানী কোথায়?", "--index",
                                   str(both_index), "--model", "fake/script:ঢাকা", "--embedder",
                                   "fake/hash"])  # fmt: skip
    assert answered.exit_code == 0 and "web search is off" not in answered.output


@pytest.mark.parametrize(
    ("question", "model", "extra", "said"),
    [
        # the reader abstained: its probability of beginning the phrase reached the threshold
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:ঢাকা@0.99", ["--abstention-threshold", "0.5",
         "--cross-check", "off"], ["why: the reader found no answer in the passages (p = 0.99)"]),
        # the cross-check replaced the reader's answer by the extractor's span
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:প্যারিস", ["--cross-check-rules", "all"],
         ["reader said: প্যারিস (replaced by cross_check)"]),
        # finalize refused an answer no passage holds
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:টোকিও", ["--cross-check", "off"],
         ["why: no passage holds this answer (টোকিও)",
          "reader said: টোকিও (replaced by finalize)"]),
        # the reader's own answer, kept: nothing to explain
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:ঢাকা", [], []),
        # kept over the extractor's different span: the other reading is shown
        ("বাংলাদেশের রাজধানী কোথায়?", "fake/script:বুড়িগঙ্গা নদীর তীরে", [],
         ["extractor found: বৃহত্তম শহর (not taken)"]),
    ],
)  # fmt: skip
def test_ask_says_why_it_abstained_and_what_the_reader_said(
    tiny_index: Path, question: str, model: str, extra: list[str], said: list[str]
) -> None:
    code, text = run_fake("ask", question, tiny_index, *extra, model=model)
    assert code == 0, text
    notes = [line for line in text.splitlines()
             if line.startswith(("why:", "reader said:", "extractor found:"))]  # fmt: skip
    assert notes == said, text


def test_an_abstention_lists_the_passages_read_not_sources(tiny_index: Path) -> None:
    """A new user's finding (2026-12-06): an abstention listed an unrelated page under
    ``sources:``, as if it were cited. Its passages are now where the reader looked."""
    question = "বাংলাদেশের রাজধানী কোথায়?"
    code, abstained = run_fake("ask", question, tiny_index, "--cross-check", "off")
    assert code == 0, abstained
    lines = abstained.splitlines()
    assert "sources:" not in lines
    assert lines[lines.index("passages read (no answer found in them):") + 1].startswith("  [1] ")
    code, answered = run_fake("ask", question, tiny_index, model="fake/script:ঢাকা")
    assert code == 0, answered
    assert "sources:" in answered.splitlines() and "passages read" not in answered


def test_an_abstention_lists_every_passage_read_apart(tiny_index: Path) -> None:
    """A new user's finding (2026-12-07): under ``--reading each`` an abstention listed the
    first hit only, though every hit had been read and none answered."""
    question = "বাংলাদেশের রাজধানী কোথায়?"
    args = ("--cross-check", "off", "--max-retries", "0", "--stop-reading-below", "0")
    code, text = run_fake("ask", question, tiny_index, *args, "--json")
    assert code == 0, text
    out = json.loads(text[text.index("{") :])  # after the web-search note (on stderr)
    read = {c for r in out["readings"] for c in r["chunk_ids"]}
    assert out["abstained"] and len(out["readings"]) >= 2, out["readings"]
    shown = [s["chunk_id"] for s in out["sources"]]
    assert len(shown) >= 2 and set(shown) <= read, (shown, read)
    hits = {r["chunk_id"] for r in out["retrieved"] if not r["is_padding"]}
    assert set(shown) == read & hits
    code, text = run_fake("ask", question, tiny_index, *args)
    lines = text.splitlines()
    at = lines.index("passages read (no answer found in them):")
    assert [line[:5] for line in lines[at + 1 : at + 1 + len(shown)]] == [
        f"  [{i}]" for i in range(1, len(shown) + 1)
    ], text


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.00042, "0.4 ms"), (0.0999, "99.9 ms"), (0.1, "0.10 s"), (2.5, "2.50 s")],
)
def test_time_line_shows_fast_stages_in_milliseconds(seconds: float, shown: str) -> None:
    """``time: retrieval 0.00 s`` hid BM25's half millisecond (a new user's finding)."""
    from kbqa.cli.ask import duration

    assert duration(seconds) == shown


def test_ask_says_retrieval_found_nothing(tmp_path: Path) -> None:
    from conftest import DOCS

    from kbqa.embedders import NoEmbedder
    from kbqa.index import build_index

    build_index(DOCS, tmp_path / "bm25", NoEmbedder(), progress=False)  # no dense part
    code, text = run("ask", "xyzzy plugh?", "--index", str(tmp_path / "bm25"), "--model",
                     "fake/script:ঢাকা")  # fmt: skip
    assert code == 0, text
    assert "why: retrieval found no passage for this question" in text
    assert "reader said" not in text  # the reader was not asked
    assert "passages read: none" in text.splitlines()  # not an empty list under a heading


def test_ask_says_a_question_without_words_has_nothing_to_search(tiny_index: Path) -> None:
    """``???`` was told "retrieval found no passage", as if the knowledge base lacked it."""
    code, text = run("ask", "???", "--index", str(tiny_index), "--model", "fake/script:ঢাকা")
    assert code == 0, text
    assert "why: the question has no word to search for" in text
    code, text = run("ask", "???", "--index", str(tiny_index), "--model", "fake/script:ঢাকা",
                     "--json")  # fmt: skip
    assert code == 0, text
    out = json.loads(text[text.index("{") :])
    assert out["abstained"] and out["why"].startswith("the question has no word to search for")
    # the extractor (--no-llm) had nothing to read either: the same reason, not "found no answer"
    code, text = run("ask", "???", "--index", str(tiny_index), "--no-llm")
    assert code == 0, text
    assert "why: the question has no word to search for" in text
    assert "retrieval found no passage" not in text


def test_ask_says_when_a_reranker_ordered_the_pool(tiny_index: Path) -> None:
    """A new user saw the same output with and without ``--reranker``; only ``--json`` said."""
    code, text = run("ask", "বাংলাদেশের রাজধানী কোথায়?", "--index", str(tiny_index),
                     "--model", "fake/script:ঢাকা", "--reranker", "lexical")  # fmt: skip
    assert code == 0, text
    assert "retrieval: " in text and "+ rerank (lexical)" in text
    code, text = run("ask", "বাংলাদেশের রাজধানী কোথায়?", "--index", str(tiny_index),
                     "--model", "fake/script:ঢাকা")  # fmt: skip
    assert code == 0, text
    assert "+ rerank" not in text


def test_ask_json_holds_the_readers_answer_beside_the_final_one(tiny_index: Path) -> None:
    code, text = run_fake("ask", "বাংলাদেশের রাজধানী কোথায়?", tiny_index, "--json",
                          "--cross-check-rules", "all", model="fake/script:প্যারিস")  # fmt: skip
    assert code == 0, text
    out = json.loads(text)
    assert out["reader_answer"] == "প্যারিস" and out["answered_by"] == "cross_check"
    assert out["answer"] != "প্যারিস"
    assert out["why"] is None  # an answer has no abstention reason


@pytest.mark.parametrize(("index", "warned"), [("tiny_index", True), ("both_index", False)])
def test_fallback_without_a_precision_part_is_a_warning(
    index: str, warned: bool, request: pytest.FixtureRequest
) -> None:
    result = runner.invoke(app, ["ask", "মঙ্গল গ্রহের প্রথম মেয়রের ফোন নম্বর কত?", "--index",
                                 str(request.getfixturevalue(index)), "--model", "fake/abstain",
                                 "--embedder", "fake/hash", "--fallback"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert ("has no precision part" in result.stderr) is warned
    assert "has no precision part" not in result.stdout


def test_eval_warns_of_a_fallback_without_a_precision_part(
    tiny_index: Path, tmp_path: Path
) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text(json.dumps({"qid": "1", "question": "বাংলাদেশের রাজধানী কোথায়?",
                              "answers": ["ঢাকা"]}, ensure_ascii=False) + "\n")  # fmt: skip
    result = runner.invoke(app, ["eval", str(qa), "--index", str(tiny_index), "--embedder",
                                 "fake/hash", "--model", "fake/abstain", "--fallback", "--out",
                                 str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "has no precision part" in result.stderr
    missing = runner.invoke(app, ["eval", str(qa), "--index", str(tmp_path / "none"),
                                  "--fallback", "--out", str(tmp_path / "run2")])  # fmt: skip
    assert missing.exit_code == 2 and "has no precision part" not in missing.output


def test_bm25_first_index_answers_then_continues(tmp_path: Path, kb_file: Path) -> None:
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--embedder", "hash",
                     "--dense", "later")  # fmt: skip
    assert code == 0, text
    assert "BM25 only so far" in text and "kbqa index --continue" in text
    code, text = run("ask", "What is the capital of France?", "--index", str(out), "--no-llm")
    assert code == 0, text
    assert "retrieval: BM25 only" in text and "Paris" in text
    # no model read it: the time line names the extractor, not an LLM
    assert ", extractor " in text and "llm " not in text and "loading index)" in text
    code, text = run("index", "--continue", "--out", str(out))
    assert code == 0 and "dense part added" in text, text
    code, text = run("ask", "What is the capital of France?", "--index", str(out), "--no-llm")
    assert code == 0 and "BM25 only" not in text, text
    code, text = run("index", "--continue", "--out", str(out))
    assert code == 0 and "already built" in text
    code, text = run("index", str(kb_file), "--continue", "--out", str(out))
    assert code == 2 and "--continue takes only --out, not a knowledge base" in text
    code, text = run("index", "--out", str(out), "--dense", "soon")
    assert code == 2 and "give a knowledge base" in text
    code, text = run("index", str(kb_file), "--out", str(out), "--dense", "soon")
    assert code == 2 and "--dense must be now or later" in text
    code, text = run("index", "--continue", "--out", str(tmp_path / "none"))
    assert code == 2 and "index not found" in text


def test_a_knowledge_base_named_in_no_utf8_is_refused_before_anything_is_written(
    kb_file: Path, tmp_path: Path
) -> None:
    """A break-it trial: the name failed with a traceback once the index was being written."""
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/\xffkb.jsonl"))
    odd.write_bytes(kb_file.read_bytes())
    code, text = run("index", str(odd), "--out", str(tmp_path / "idx"))
    assert code == 2 and "not a valid file name here (not UTF-8); rename it" in text, text
    assert [p.name for p in tmp_path.iterdir() if "idx" in p.name] == []


@pytest.mark.parametrize("k", ["0", "-2"])
def test_bad_k(tiny_index: Path, k: str) -> None:
    code, text = run("ask", "q?", "--index", str(tiny_index), "--k", k)
    assert code == 2 and "k must be a positive integer" in text


def test_bad_kb_line_and_skip(kb_file: Path, tmp_path: Path) -> None:
    with kb_file.open("a") as fh:
        fh.write("oops\n")
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--embedder", "fake/hash")
    assert code == 2 and "kb.jsonl:6" in text
    assert not out.exists()
    code, text = run(
        "index", str(kb_file), "--out", str(out), "--embedder", "fake/hash", "--skip-bad-lines"
    )
    assert code == 0 and "documents      5" in text and "skipped        1 (first: " in text


def test_a_skipped_line_is_warned_about_once(
    kb_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the knowledge base is read once to learn recurring blocks, then once per strategy
    with kb_file.open("a") as fh:
        fh.write("oops\n")
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--embedder", "fake/hash",
                     "--skip-bad-lines", "--strategy", "both")  # fmt: skip
    warned = [r for r in caplog.records if "kb.jsonl:6" in r.getMessage()]
    assert code == 0 and len(warned) == 1 and "skipped        1 (first: " in text


def test_missing_model_package(tiny_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kbqa.llm.models as models

    monkeypatch.setitem(
        models.MODELS,
        "ghost",
        models.ModelSpec(
            "ghost", ("ghost-model-gguf==1.0",), "ghost.gguf", "0" * 64, None, "completion"
        ),
    )
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tiny_index.parent / "cache"))
    code, text = run_fake("ask", "বাংলাদেশের রাজধানী কোথায়?", tiny_index, model="ghost")
    assert code == 0 and "pip install ghost-model-gguf==1.0" in text  # named in the warning
    assert "pattern extractor" in text and "route: classify -> retrieve -> extract" in text


def test_a_model_file_that_cannot_load_is_an_error_not_a_fallback(
    tiny_index: Path, tmp_path: Path
) -> None:
    """A break-it trial: a corrupt ``.gguf`` named with --model only warned, and the pattern
    extractor answered (exit 0); a registered model's missing package still falls back."""
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model " * 8)
    code, text = run("ask", "বাংলাদেশের রাজধানী কোথায়?", "--index", str(tiny_index),
                     "--embedder", "fake/hash", "--model", str(broken))  # fmt: skip
    assert code == 2 and "broken.gguf" in text and "answer:" not in text, text


@pytest.mark.parametrize("where", ["through a file", "read-only", "no home"])
def test_an_unwritable_model_cache_degrades_to_the_extractor(
    tiny_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Issue 15 item 9: this died with a PermissionError traceback before."""
    import os

    import kbqa.llm.models as models

    monkeypatch.setitem(  # a registered model whose package is present (this test's own)
        models.MODELS,
        "cached",
        models.ModelSpec("cached", ("pytest",), "cached.gguf", "0" * 64, None, "completion"),
    )
    monkeypatch.setattr(models, "_assemble_parts", lambda spec, tmp: tmp.write_bytes(b"x"))
    if where == "through a file":
        (tmp_path / "file").write_text("x")
        monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "file" / "cache"))
    elif where == "read-only":
        (tmp_path / "ro").mkdir(mode=0o500)
        if os.geteuid() == 0:  # root writes a 0o500 folder: refuse as a read-only mount would

            def read_only(spec: object, tmp: Path) -> None:
                raise OSError(30, "Read-only file system", str(tmp))

            monkeypatch.setattr(models, "_assemble_parts", read_only)
        monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "ro"))
    else:
        monkeypatch.delenv("KBQA_CACHE_DIR", raising=False)
        monkeypatch.setattr(Path, "home", lambda: (_ for _ in ()).throw(RuntimeError("no home")))
    code, text = run_fake("ask", "বাংলাদেশের রাজধানী কোথায়?", tiny_index, model="cached")
    assert code == 0 and "KBQA_CACHE_DIR" in text and "Traceback" not in text
    assert "pattern extractor" in text and "route: classify -> retrieve -> extract" in text


def test_unknown_model(tiny_index: Path) -> None:
    code, text = run_fake("ask", "q?", tiny_index, model="nope")
    assert code == 2 and "unknown model 'nope'" in text


def test_bad_question_file(tiny_index: Path, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"question": "ok?", "answers": ["x"]}\n{"answers": ["y"]}\n')
    code, text = run_fake("eval", str(qa), tiny_index)
    assert code == 2 and "qa.jsonl:2" in text


def test_folder_with_a_foreign_manifest_is_not_overwritten(kb_file: Path, tmp_path: Path) -> None:
    webapp = tmp_path / "webapp"
    webapp.mkdir()
    (webapp / "manifest.json").write_text('{"name": "my pwa"}')
    (webapp / "index.html").write_text("<html></html>")
    code, text = run("index", str(kb_file), "--out", str(webapp), "--embedder", "fake/hash")
    assert code == 2 and "not a kbqa index" in text
    assert sorted(p.name for p in webapp.iterdir()) == ["index.html", "manifest.json"]


def test_index_inside_the_knowledge_base_folder_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.txt").write_text("Paris is the capital of France.")
    code, text = run("index", str(site), "--out", str(site / "idx"), "--embedder", "fake/hash")
    assert code == 2 and "inside the knowledge base" in text
    assert [p.name for p in site.iterdir()] == ["a.txt"]


def test_unwritable_index_path(kb_file: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, text = run(
        "index", str(kb_file), "--out", str(blocker / "idx"), "--embedder", "fake/hash"
    )
    assert code == 2 and "cannot write index" in text


def test_symbols_only_knowledge_base(tmp_path: Path) -> None:
    kb = tmp_path / "kb.jsonl"
    kb.write_text('{"doc_id": "a", "text": "!!! ???"}\n{"doc_id": "b", "text": "🙂🙂"}\n')
    code, text = run("index", str(kb), "--out", str(tmp_path / "idx"), "--embedder", "fake/hash")
    assert code == 2 and "no indexable words" in text


@pytest.mark.parametrize("question", ["???!!!", "🙂🚀", "-"])
def test_question_without_words(tiny_index: Path, question: str) -> None:
    code, text = run_fake("ask", question, tiny_index, model="fake/script:ঢাকা")
    assert code == 0, text


def test_index_path_is_a_file(kb_file: Path) -> None:
    code, text = run("ask", "q?", "--index", str(kb_file))
    assert code == 2 and "is a file, not an index directory" in text


def test_large_k_on_small_context(tiny_index: Path) -> None:
    code, text = run_fake(
        "ask", "ঢাকা?", tiny_index, "--k", "1000", "--n-ctx", "200", model="fake/script:ঢাকা"
    )
    assert code == 0, text


def test_eval_out_is_checked_before_running(tiny_index: Path, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"question": "ok?", "answers": ["x"]}\n')
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, text = run_fake("eval", str(qa), tiny_index, "--out", str(blocker))
    assert code == 2 and "it is a file" in text
    assert blocker.read_text() == "x"


def test_one_failing_question_does_not_sink_the_eval(tiny_index: Path, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    long_q = "শব্দ " * 5000
    qa.write_text(
        json.dumps({"qid": "long", "question": long_q, "answers": ["x"]})
        + "\n"
        + json.dumps({"qid": "ok", "question": "রাজধানী কোথায়?", "answers": ["ঢাকা"]})
        + "\n"
    )
    out = tmp_path / "run"
    code, text = run_fake(
        "eval", str(qa), tiny_index, "--n-ctx", "512", "--out", str(out), model="fake/script:ঢাকা"
    )
    assert code == 0, text
    assert json.loads((out / "summary.json").read_text())["errors"] == 1
    records = {
        r["qid"]: r for r in map(json.loads, (out / "records.jsonl").read_text().splitlines())
    }
    assert "error" in records["long"]
    assert records["ok"]["scores"]["exact_match"] == 1.0, records["ok"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ('{"question": "q?", "answers": 5}', "'answers' must be a list of strings"),
        ('{"question": "q?", "answers": {"text": ["x"]}}', "'answers' must be a list of strings"),
        ('{"question": "q?", "answers": [null, "x"]}', "'answers' must be a list of strings"),
        (
            '{"question": "q?", "answers": ["x"], "answerable": "false"}',
            "'answerable' must be true",
        ),
        (
            '{"question": "q?", "answers": [], "answerable": true}',
            "answerable question has no answers",
        ),
        ('{"question": ["a", "b"], "answers": ["x"]}', "'question' must be a non-empty string"),
    ],
)
def test_question_file_validation(
    tiny_index: Path, tmp_path: Path, line: str, problem: str
) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"question": "fine?", "answers": ["x"]}\n' + line + "\n")
    code, text = run_fake("eval", str(qa), tiny_index)
    assert code == 2 and "qa.jsonl:2" in text and problem in text


def test_context_rejects_tiny_n_ctx(tiny_index: Path) -> None:
    code, text = run("ask", "q?", "--index", str(tiny_index), "--n-ctx", "33")
    assert code == 2 and "n_ctx (33) must be at least" in text


def test_parent_of_indexes_gets_a_hint(tiny_index: Path) -> None:
    code, text = run("ask", "q?", "--index", str(tiny_index.parent))
    assert code == 2 and "pass one to --index" in text and str(tiny_index) in text
    assert f"/.{tiny_index.name}.v-" not in text  # not the version directory it links to


def test_version() -> None:
    code, text = run("--version")
    assert code == 0 and text.startswith("kbqa ")


def test_interrupted_build_says_how_far_it_got_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kbqa.embedders as embedders
    from kbqa.embedders import HashEmbedder

    class StopsAfterOneBatch(HashEmbedder):
        calls = 0

        def embed_passages(self, texts: list[str]):  # type: ignore[no-untyped-def]
            StopsAfterOneBatch.calls += 1
            if StopsAfterOneBatch.calls > 1:
                raise KeyboardInterrupt
            return super().embed_passages(texts)

    kb = tmp_path / "kb.jsonl"
    kb.write_text(
        "".join(
            json.dumps({"doc_id": f"d{i}", "text": f"document {i} says thing {i}."}) + "\n"
            for i in range(70)
        )
    )
    out = tmp_path / "idx"
    monkeypatch.setattr(embedders, "load_embedder", lambda *a, **k: StopsAfterOneBatch())
    result = CliRunner().invoke(app, ["index", str(kb), "--out", str(out), "--embedder", "hash"])
    assert result.exit_code == 130
    assert "interrupted: 32 of 70 chunks embedded; run the same command to resume" in result.output
    monkeypatch.undo()
    code, text = run("ask", "thing 3?", "--index", str(out), "--no-llm")
    assert code == 2 and "32 of 70 chunk texts embedded: run the same" in text
    code, text = run("index", str(kb), "--out", str(out), "--embedder", "hash")
    assert code == 0 and "resumed        32 vectors" in text, text


def test_continue_and_dense_later_option_errors(tmp_path: Path, kb_file: Path) -> None:
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--dense", "later")
    assert code == 2 and "--dense later needs a dense embedder" in text
    code, text = run("index", "--continue", "--out", str(out), "--embedder", "e5")
    assert code == 2 and "--continue takes only --out" in text
    # a break-it trial: these were ignored, --store with no word that nothing was written
    for extra in (["--store", "milvus://s.db"], ["--chunk-size", "5"], ["--no-reuse"]):
        code, text = run("index", "--continue", "--out", str(out), *extra)
        assert code == 2 and f"--continue takes only --out, not {extra[0]}" in text, extra


def test_an_out_uri_is_repeated_as_typed(tmp_path: Path, kb_file: Path) -> None:
    """A break-it trial: the suggestion read milvus:///kb.db (an absolute path) for
    milvus://kb.db, and offered an http:// URI to --store, which takes milvus:// only."""
    code, text = run("index", str(kb_file), "--out", "milvus://kb.db")
    assert code == 2 and "--out milvus://kb.db is a URI" in text
    assert "--store milvus://kb.db)" in text
    code, text = run("index", str(kb_file), "--out", "http://x/y")
    assert code == 2 and "--out http://x/y is a URI" in text and "--store milvus://kb.db)" in text


def test_the_console_script_prints_no_debug_lines_of_bm25s(kb_file: Path, tmp_path: Path) -> None:
    # bm25s sets its logger to DEBUG when imported; main() filters what it logs below WARNING
    import subprocess
    import sys

    args = ["index", str(kb_file), "--out", str(tmp_path / "i"), "--embedder", "fake/hash"]
    cmd = [sys.executable, "-m", "kbqa.cli", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "index written to" in done.stdout and "bm25s" not in done.stderr


def _commands(command: object, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every command under ``command`` (a click group or command) with its path of names."""
    subs = getattr(command, "commands", {})
    found = [(path, command)]
    for name, sub in subs.items():
        found += _commands(sub, (*path, name))
    return found


def test_help_shows_every_bracketed_word_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    """Typer's help reads rich markup, which drops ``[server]`` from ``kbqa[server]`` unless
    it is escaped."""
    import typer.main
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 400)  # read once per process by Typer
    checked = 0
    for path, command in _commands(typer.main.get_command(app)):
        helps = [getattr(p, "help", None) or "" for p in getattr(command, "params", [])]
        words = [w.replace("\\[", "[") for h in helps for w in re.findall(r"\\?\[[^\]]+\]", h)]
        if not words:
            continue
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
        for word in words:
            assert word in res.output, f"kbqa {' '.join(path)} --help lost {word!r}"
            checked += 1
    assert checked >= 5, "ask, chat and eval's --llm-url, index's --store, chat's --db at least"


@pytest.mark.parametrize("columns", [80, 100])
def test_help_prints_every_option_name_in_full(
    columns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kbqa ask --help`` in an 80-column terminal cut a dozen names (``--stop-reading-…``):
    one table held every setting, so the longest names narrowed every column. The settings are
    grouped by stage now (:data:`kbqa.cli.settings.HELP_PANELS`), one table each. At 80
    columns every name is whole but one ``--no-`` form (``--no-retry-unread-first``, beside
    the longest name of its table); at 100, every name."""
    import typer.main
    import typer.rich_utils

    # Typer reads $TERMINAL_WIDTH once, when it first prints help in the process
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", columns)
    checked = 0
    for path, command in _commands(typer.main.get_command(app)):
        params = getattr(command, "params", [])
        names = [o for p in params for o in p.opts if o.startswith("--")]
        if columns > 80:
            names += [o for p in params for o in p.secondary_opts if o.startswith("--")]
        if not names:
            continue
        res = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(columns)})
        assert res.exit_code == 0, res.output
        shown = set(re.findall(r"--[\w-]+(?!…)\b", res.output))
        for name in names:
            assert name in shown, f"kbqa {' '.join(path)} --help cut {name!r} at {columns} columns"
            checked += 1
    assert checked >= 150


def test_help_groups_the_graph_settings_by_stage() -> None:
    from kbqa.cli.settings import HELP_PANELS

    res = runner.invoke(app, ["ask", "--help"], env={"COLUMNS": "120"})
    panels = re.findall(r"╭─ ([\w ]+?) ─", res.output)
    assert panels == ["Arguments", "Options", *HELP_PANELS], panels
    from kbqa.context import Context

    grouped = [n for names in HELP_PANELS.values() for n in names]
    assert sorted(grouped) == sorted(set(Context.field_names()) - {"index_dir"})


def test_a_file_name_with_a_newline_stays_on_its_sources_line(tmp_path: Path) -> None:
    """Issue 34 item 4: ``sources:`` printed a file name's newline as a line break."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "two\nlines.txt").write_text("Paris is the capital of France.", "utf-8")
    out = tmp_path / "idx"
    code, text = run("index", str(kb), "--out", str(out), "--embedder", "fake/hash")
    assert code == 0, text
    code, text = run_fake("ask", "What is the capital of France?", out, model="fake/script:Paris")
    assert code == 0, text
    lines = text.splitlines()
    source = lines[lines.index("sources:") + 1]
    assert "two\\nlines" in source and source.startswith("  [1] ") and source.endswith(")")


@pytest.mark.parametrize("role", ["reader", "verifier", "reranker"])
def test_finetune_help_needs_no_finetune_extra(role: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's finding: ``kbqa finetune reader --help`` asked for torch, transformers and
    peft before it listed a flag, and listed them as ``--init_adapter``."""
    import sys

    for module in ("transformers", "torch", "peft"):
        monkeypatch.setitem(sys.modules, module, None)  # as if the extra were not installed
    result = runner.invoke(app, ["finetune", role, "--help"])
    assert result.exit_code == 0, result.output
    assert f"usage: kbqa finetune {role}" in result.output
    assert "--learning-rate FLOAT" in result.output and "--learning_rate" not in result.output
    assert ("--trap-ratio" in result.output) is (role != "reranker")  # a reader's flag, hidden
    assert "pip install 'kbqa[finetune]'" in " ".join(result.output.split())
