"""The natq training questions (``training/natq``): the committed file is well formed, and
``build.py`` puts each question's evidence back from the knowledge base or names what is wrong."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NATQ = ROOT / "training" / "natq"
spec = importlib.util.spec_from_file_location("natq_build", NATQ / "build.py")
assert spec is not None and spec.loader is not None
natq_build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(natq_build)


def test_the_committed_questions_are_well_formed() -> None:
    rows = [json.loads(line) for line in (NATQ / "questions.jsonl").open(encoding="utf-8")]
    assert len(rows) == 528 and len({r["qid"] for r in rows}) == 528
    for r in rows:
        assert r["question"].strip().endswith("?"), r["qid"]
        assert r["doc_id"].startswith("haque2020-"), r["qid"]  # training passages only
        if r["answerable"]:
            start, end = r["evidence_span"]
            assert r["answers"] and 0 <= start < end, r["qid"]
        else:
            assert r["answers"] == [] and r["evidence_span"] is None, r["qid"]
    assert sum(not r["answerable"] for r in rows) == 89


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def test_build_restores_the_evidence_and_refuses_another_text(tmp_path: Path) -> None:
    text = "ঢাকা বাংলাদেশের রাজধানী। পদ্মা একটি নদী।"
    kb = _write(tmp_path / "kb.jsonl", [{"doc_id": "d1", "text": text}])
    start = text.index("পদ্মা")
    questions = _write(tmp_path / "q.jsonl", [
        {"qid": "q1", "question": "কোন নদী?", "answers": ["পদ্মা"], "doc_id": "d1",
         "answerable": True, "evidence_span": [start, len(text)]},
        {"qid": "q2", "question": "কত লোক?", "answers": [], "doc_id": "d1",
         "answerable": False, "evidence_span": None},
    ])  # fmt: skip
    out = tmp_path / "out.jsonl"
    assert natq_build.build(kb, questions, out, ["first\n"]) == 3
    lines = out.read_text("utf-8").splitlines()
    assert lines[0] == "first"
    assert json.loads(lines[1])["evidence"] == "পদ্মা একটি নদী।"
    assert json.loads(lines[2])["evidence"] == "" and "evidence_span" not in lines[2]
    _write(kb, [{"doc_id": "d1", "text": "অন্য লেখা, " + text}])  # another version of the passage
    with pytest.raises(SystemExit, match=r"\(q1\): no answer in its evidence"):
        natq_build.build(kb, questions, out)
    _write(kb, [{"doc_id": "d2", "text": text}])
    with pytest.raises(SystemExit, match=r"\(q1\): passage .d1. is not in"):
        natq_build.build(kb, questions, out)


def test_build_refuses_bad_input_in_one_line_and_keeps_its_inputs(tmp_path: Path) -> None:
    """A break-it trial: the output named as an input replaced it; a span out of range, a
    passage given twice or an answerable question without a span passed silently."""
    text = "পদ্মা একটি নদী।"
    kb = _write(tmp_path / "kb.jsonl", [{"doc_id": "d1", "text": text}])
    good = {"qid": "q1", "question": "কোন নদী?", "answers": ["পদ্মা"], "doc_id": "d1",
            "answerable": True, "evidence_span": [0, len(text)]}  # fmt: skip
    questions = _write(tmp_path / "q.jsonl", [good])
    before = questions.read_bytes()
    with pytest.raises(SystemExit, match="is an input"):
        natq_build.build(kb, questions, questions)
    assert questions.read_bytes() == before
    for bad, says in (
        ({"evidence_span": [0, 10_000]}, "within its passage"),
        ({"evidence_span": [-5, -1]}, "within its passage"),
        ({"evidence_span": None}, "within its passage"),
        ({"answers": "পদ্মা"}, "list of non-empty strings"),
        ({"answers": [""]}, "list of non-empty strings"),
        ({"answerable": False}, "unanswerable question has answers"),
    ):
        _write(questions, [good | bad])
        with pytest.raises(SystemExit, match=says):
            natq_build.build(kb, questions, tmp_path / "out.jsonl")
    _write(kb, [{"doc_id": "d1", "text": text}, {"doc_id": "d1", "text": "অন্য"}])
    with pytest.raises(SystemExit, match="passage d1 is given twice"):
        natq_build.build(kb, questions, tmp_path / "out.jsonl")
    with pytest.raises(SystemExit, match="its folder is missing"):
        natq_build.build(kb, questions, tmp_path / "no" / "out.jsonl")
    (tmp_path / "broken.jsonl").write_text("{not json\n", "utf-8")
    with pytest.raises(SystemExit, match=r"broken\.jsonl:1: not JSON"):
        natq_build.build(tmp_path / "broken.jsonl", questions, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()  # nothing half-written
    # a second break-it trial: a link as the output was replaced by a file, a user's OUT.tmp
    # was deleted, and JSON nested too deep was a traceback
    _write(kb, [{"doc_id": "d1", "text": text}])
    (tmp_path / "elsewhere.jsonl").write_text("keep", "utf-8")
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(SystemExit, match="it is a link or not a file"):
        natq_build.build(kb, questions, tmp_path / "link.jsonl")
    (tmp_path / "new.jsonl.tmp").write_text("mine", "utf-8")
    _write(questions, [good])
    assert natq_build.build(kb, questions, tmp_path / "new.jsonl") == 1
    assert (tmp_path / "new.jsonl.tmp").read_text("utf-8") == "mine"
    (tmp_path / "deep.jsonl").write_text("[" * 100_000 + "]" * 100_000 + "\n", "utf-8")
    with pytest.raises(SystemExit, match="not JSON"):
        natq_build.build(tmp_path / "deep.jsonl", questions, tmp_path / "out.jsonl")
    assert not list(tmp_path.glob(".*.tmp"))


def test_every_answer_is_in_its_evidence_in_haque_2020(tmp_path: Path) -> None:
    data = Path(os.environ.get("KBQA_DATA_DIR", ROOT.parent / "shared" / "data"))
    kb = data / "bn" / "train" / "haque2020_kb.jsonl"
    if not kb.is_file():
        pytest.skip(f"Haque 2020 is not at {kb} (set KBQA_DATA_DIR)")
    assert natq_build.build(kb, NATQ / "questions.jsonl", tmp_path / "natq.qa.jsonl") == 528


def test_a_bad_mix_line_is_named_by_its_line_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Left from a break-it trial: ``--mix`` errors counted non-blank lines, so after a blank
    line the number named the wrong line of the file."""
    text = "পদ্মা একটি নদী।"
    kb = _write(tmp_path / "kb.jsonl", [{"doc_id": "d1", "text": text}])
    mix = tmp_path / "mix.jsonl"
    mix.write_text('{"question": "কে?"}\n\n[1]\n', "utf-8")
    argv = ["build.py", str(kb), str(tmp_path / "out.jsonl"), "--mix", str(mix)]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit, match=r"mix\.jsonl: line 3 is not a JSON object"):
        natq_build.main()
    assert not (tmp_path / "out.jsonl").exists()


def test_a_json_line_holding_a_line_separator_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A break-it finding: a mix file written by ``json.dumps(ensure_ascii=False)`` with U+2028
    or ``\\x85`` in a question, or starting with a BOM, was refused (``str.splitlines``)."""
    text = "পদ্মা একটি নদী।"
    kb = tmp_path / "kb.jsonl"
    kb.write_text("\ufeff" + json.dumps({"doc_id": "d1", "text": text}) + "\n", "utf-8")
    mix = tmp_path / "mix.jsonl"
    rows = [{"question": "কে\u2028এক?"}, {"question": "কী\x85দুই?"}]
    mix.write_text("\ufeff" + "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    questions = _write(tmp_path / "q.jsonl", [
        {"qid": "q1", "question": "কোন নদী?", "answers": ["পদ্মা"], "doc_id": "d1",
         "answerable": True, "evidence_span": [0, len(text)]}])  # fmt: skip
    out = tmp_path / "out.jsonl"
    argv = ["build.py", str(kb), str(out), "--questions", str(questions), "--mix", str(mix),
            "--mix-sample", "2"]  # fmt: skip
    monkeypatch.setattr("sys.argv", argv)
    natq_build.main()
    written = [json.loads(line) for line in out.read_text("utf-8").split("\n") if line]
    assert sorted(r["question"] for r in written[:2]) == sorted(r["question"] for r in rows)
    assert len(written) == 3 and written[2]["answers"] == ["পদ্মা"]
