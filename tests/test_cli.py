"""The command line: bad input gives a clear error and exit code 2; nothing half-written."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbqa.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_index_ask_eval_with_fakes(kb_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "idx"
    code, text = run("index", str(kb_file), "--out", str(out), "--embedder", "fake/hash")
    assert code == 0, text
    assert "documents      5" in text and "peak RSS" in text
    code, text = run(
        "ask",
        "বাংলাদেশের রাজধানী কোথায়?",
        "--index",
        str(out),
        "--model",
        "fake/script:ঢাকা",
        "--embedder",
        "fake/hash",
    )
    assert code == 0, text
    assert "answer: ঢাকা" in text and "route: classify -> retrieve" in text and "[1] ঢাকা" in text
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
    report = tmp_path / "r.json"
    code, text = run(
        "eval",
        str(qa),
        "--index",
        str(out),
        "--model",
        "fake/script:ঢাকা",
        "--embedder",
        "fake/hash",
        "--out",
        str(report),
    )
    assert code == 0, text
    summary = json.loads(report.read_text())["summary"]
    assert summary["em"] == 1.0 and summary["recall@1"] == 1.0


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question(tiny_index: Path, question: str) -> None:
    code, text = run("ask", question, "--index", str(tiny_index), "--embedder", "fake/hash")
    assert code == 2 and "question is empty" in text


def test_missing_index(tmp_path: Path) -> None:
    code, text = run("ask", "q?", "--index", str(tmp_path / "none"))
    assert code == 2 and "index not found" in text


def test_index_built_by_another_embedder(tiny_index: Path) -> None:
    code, text = run("ask", "q?", "--index", str(tiny_index), "--model", "fake/abstain")
    assert code == 2 and "built with embedder 'fake/hash'" in text


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
    assert code == 0 and "documents      5" in text


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
    code, text = run(
        "ask", "q?", "--index", str(tiny_index), "--model", "ghost", "--embedder", "fake/hash"
    )
    assert code == 2 and "pip install ghost-model-gguf==1.0" in text


def test_unknown_model(tiny_index: Path) -> None:
    code, text = run(
        "ask", "q?", "--index", str(tiny_index), "--model", "nope", "--embedder", "fake/hash"
    )
    assert code == 2 and "unknown model 'nope'" in text


def test_bad_question_file(tiny_index: Path, tmp_path: Path) -> None:
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"question": "ok?", "answers": ["x"]}\n{"answers": ["y"]}\n')
    code, text = run(
        "eval",
        str(qa),
        "--index",
        str(tiny_index),
        "--embedder",
        "fake/hash",
        "--model",
        "fake/abstain",
    )
    assert code == 2 and "qa.jsonl:2" in text
