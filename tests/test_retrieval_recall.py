"""benchmarks/retrieval_recall.py: the ceiling it prints first is the share of questions whose
gold answer is in some chunk of the index at all; bad input is a one-line error (break-it
findings of 2026-12-06)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kbqa.evals.datasets import Question

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import retrieval_recall


def test_ceiling_counts_answers_the_index_holds(tiny_index: Path) -> None:
    questions = [
        Question("1", "বাংলাদেশের রাজধানী কোথায়?", ["ঢাকা"]),
        Question("2", "Where does Paris lie?", ["the Seine"]),  # articles fold away
        Question("3", "Where was Marie Curie born?", ["Warsaw"]),  # in no chunk
        Question("4", "রবীন্দ্রনাথ কি নোবেল পুরস্কার পান?", ["হ্যাঁ"]),  # a verdict: left out
    ]
    share, counted = retrieval_recall.answer_ceiling(str(tiny_index), questions)
    assert (share, counted) == (pytest.approx(2 / 3), 3)


def test_ceiling_takes_whole_tokens_and_every_span(tiny_index: Path) -> None:
    def ceiling(gold: str) -> float:
        return retrieval_recall.answer_ceiling(str(tiny_index), [Question("1", "q", [gold])])[0]

    assert ceiling("Pari") == 0.0  # not inside a word
    assert ceiling("Seine; Lyon") == 0.0
    assert ceiling("Seine; বুড়িগঙ্গা") == 1.0  # spans in two chunks count: an upper bound


def _questions(tmp_path: Path, rows: list[dict[str, object]]) -> str:
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return str(path)


def _run(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["retrieval_recall.py", *args])
    retrieval_recall.main()


def test_one_question_and_yes_no_golds_print_rows(
    tiny_index: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    one = _questions(
        tmp_path, [{"qid": "1", "question": "Where does Paris lie?", "answers": ["Seine"]}]
    )
    _run(monkeypatch, "--index", f"t={tiny_index}", "--questions", one, "--n", "0")
    out = capsys.readouterr().out
    assert "ceiling: a gold answer in some chunk of" in out and "1.000 of 1" in out
    assert out.splitlines()[-1].startswith("t ")  # a row, with p95 from a single timing

    yes_no = _questions(tmp_path, [{"qid": "1", "question": "Is Paris big?", "answers": ["Yes"]}])
    _run(monkeypatch, "--index", f"t={tiny_index}", "--questions", yes_no, "--n", "0")
    assert "ceiling: n/a" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--index", "no-equals-sign"], "is not NAME=DIR"),
        (["--index", "t=/nonexistent/index"], "index not found"),
        (["--index", "t={tiny}", "--bm25-only", "u"], "no --index is named so"),
        (["--index", "t={tiny}", "--n", "-1"], "is negative"),
        (["--index", "t={tiny}", "--n", "abc"], "is not a whole number"),
        (["--index", "t={tiny}", "--index", "t={tiny}"], "share a NAME"),
        (["--index", "t={tiny}", "--questions", "{unanswerable}"], "no answerable question"),
        (["--index", "t={tiny}", "--questions", "{missing}"], "missing.jsonl"),
    ],
)
def test_bad_input_is_a_one_line_error(
    args: list[str], message: str, tiny_index: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    unanswerable = _questions(
        tmp_path, [{"qid": "1", "question": "Who rules Mars?", "answers": [], "answerable": False}]
    )
    paths = {"tiny": str(tiny_index), "unanswerable": unanswerable,
             "missing": str(tmp_path / "missing.jsonl")}  # fmt: skip
    argv = [a.format(**paths) for a in args]
    if "--questions" not in argv:
        argv += ["--questions", unanswerable.replace("q.jsonl", "unused.jsonl")]
    with pytest.raises(SystemExit) as exit_:
        _run(monkeypatch, *argv, *([] if "--n" in argv else ["--n", "0"]))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
