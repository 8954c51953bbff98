"""The eval runner: resumable runs, refusal of mismatched runs, ablations, models, question
generation, and that nothing is sent anywhere without a LangSmith key."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbqa.cli import app
from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.evals.datasets import load_questions
from kbqa.evals.run_dir import RECORDS_FILE, run_config
from kbqa.evals.runner import evaluate_questions
from kbqa.resources import chat_model_for

runner = CliRunner()
QUESTIONS = [
    ("q1", "বাংলাদেশের রাজধানী কোথায়?", ["ঢাকা"], "d1"),
    ("q2", "রবীন্দ্রনাথ ঠাকুর কোন সালে নোবেল পুরস্কার পান?", ["১৯১৩ সালে"], "d2"),
    ("q3", "What is the capital of France?", ["Paris"], "d3"),
    ("q4", "পদ্মা কোন নদীর শাখা?", ["গঙ্গার"], "d4"),
    ("q5", "When did Marie Curie win the Nobel Prize in Physics?", ["1903"], "d5"),
    ("q6", "চাঁদে প্রথম কে গিয়েছিলেন?", [], None),
]


@pytest.fixture
def qa_file(tmp_path: Path) -> Path:
    path = tmp_path / "qa.jsonl"
    path.write_text(
        "".join(
            json.dumps(
                {"qid": q, "question": text, "answers": a, "doc_id": d, "answerable": bool(a)},
                ensure_ascii=False,
            )
            + "\n"
            for q, text, a, d in QUESTIONS
        ),
        encoding="utf-8",
    )
    return path


def fake_ctx(index: Path, model: str = "fake/first-sentence", **kw: object) -> Context:
    return Context(index_dir=str(index), model=model, embedder="fake/hash", **kw)  # type: ignore[arg-type]


def test_resume_skips_finished_questions(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    qs = load_questions(qa_file)
    ctx = fake_ctx(
        tiny_index,
        model="fake/script:r1",
        verify=False,
        fallback=False,
        web_search="off",
        reading="joint",  # one reader call a reading, counted below
    )
    run_dir = tmp_path / "run"
    cfg = run_config(qa_file, "sha", ctx)
    first = evaluate_questions(qs, ctx, run_dir, config=cfg, progress=False)
    assert first.summary["harness"]["last_session"]["questions_run"] == 6
    # simulate a kill after two questions, in the middle of writing the third record
    lines = (run_dir / RECORDS_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    (run_dir / RECORDS_FILE).write_text("".join(lines[:2]) + lines[2][:25], encoding="utf-8")
    model = chat_model_for(ctx)
    calls_before = model.calls  # type: ignore[attr-defined]
    second = evaluate_questions(qs, ctx, run_dir, config=cfg, progress=False)
    h = second.summary["harness"]
    assert (h["sessions"], h["questions_run"], h["last_session"]["questions_run"]) == (2, 10, 4)
    # 4 questions re-run; the unanswerable one retries once, so 4 or 5 LLM calls
    assert model.calls - calls_before in (4, 5)  # type: ignore[attr-defined]
    records = [json.loads(x) for x in (run_dir / RECORDS_FILE).read_text().splitlines()]
    assert sorted(r["qid"] for r in records) == [q.qid for q in qs]
    assert [r["qid"] for r in second.records] == [q.qid for q in qs]
    third = evaluate_questions(qs, ctx, run_dir, config=cfg, progress=False)
    assert third.summary["harness"] == h, "a re-run that runs nothing keeps the figures"
    assert third.summary["peak_rss_mib"] == second.summary["peak_rss_mib"]


def test_a_record_holds_the_readers_answer_beside_the_final_one(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    qs = load_questions(qa_file)[:1]  # বাংলাদেশের রাজধানী কোথায়?
    ctx = fake_ctx(tiny_index, model="fake/script:প্যারিস#record", web_search="off",
                   cross_check_rules="all")  # fmt: skip
    run = evaluate_questions(qs, ctx, tmp_path / "run", progress=False)
    record = run.records[0]
    assert record["answered_by"] == "cross_check" and record["answer"] != "প্যারিস"
    assert record["reader_answer"] == "প্যারিস"  # the reader's, kept beside the final one


def test_a_record_keeps_every_output_field_but_those_left_out_on_purpose(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    """Issue 35 item 3: the record's fields come from the state's annotations, not a list kept
    by hand; a field left out is named with its reason, and only real fields can be named."""
    from typing import get_type_hints

    from kbqa.evals.records import NOT_RECORDED, RUNNER_FIELDS
    from kbqa.state import OutputState

    fields = set(get_type_hints(OutputState))
    assert set(NOT_RECORDED) <= fields, set(NOT_RECORDED) - fields
    assert all(reason.strip() for reason in NOT_RECORDED.values())
    qs = load_questions(qa_file)[:1]
    ctx = fake_ctx(tiny_index, model="fake/script:ঢাকা#rec", web_search="off")
    record = evaluate_questions(qs, ctx, tmp_path / "run", progress=False).records[0]
    assert fields - set(NOT_RECORDED) <= set(record), fields - set(NOT_RECORDED) - set(record)
    assert set(RUNNER_FIELDS) <= set(record)
    assert record["question_coverage"] is not None  # a value the graph set, not the default


def test_run_with_other_settings_is_refused(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    qs = load_questions(qa_file)[:2]
    ctx = fake_ctx(tiny_index)
    run_dir = tmp_path / "run"
    evaluate_questions(qs, ctx, run_dir, config=run_config(qa_file, "sha", ctx), progress=False)
    other = fake_ctx(tiny_index, k=5)
    with pytest.raises(InputError, match=r"other settings \(context.k: 3 then, 5 now\)"):
        evaluate_questions(qs, other, run_dir, config=run_config(qa_file, "sha", other))
    run = evaluate_questions(
        qs, other, run_dir, config=run_config(qa_file, "sha", other), overwrite=True,
        progress=False,
    )  # fmt: skip
    assert run.summary["harness"]["last_session"]["questions_run"] == 2


def test_killed_eval_resumes(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    """SIGTERM a real `kbqa eval` process mid-run, re-run it, check nothing is recomputed."""
    run_dir = tmp_path / "run"
    many = tmp_path / "many.jsonl"  # enough questions that draining them would show
    many.write_text(
        "".join(
            json.dumps({"qid": f"{i}", "question": f"প্রশ্ন {i}?", "answers": ["x"]}) + "\n"
            for i in range(40)
        )
    )
    qa_file = many
    cmd = [sys.executable, "-m", "kbqa.cli", "eval", str(qa_file), "--index", str(tiny_index),
           "--embedder", "fake/hash", "--model", "fake/slow:0.2", "--out", str(run_dir),
           "--no-report"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    records = run_dir / RECORDS_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if records.exists() and len(records.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert time.monotonic() - t0 < 5, "exits at once, without running the queued questions"
    assert proc.returncode == 128 + signal.SIGTERM
    first_err = err.decode()
    done = len(records.read_text().splitlines())
    assert 2 <= done < 40, "killed mid-run"
    assert json.loads((run_dir / "summary.json").read_text())["partial"] is True
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["harness"]["last_session"]["questions_run"] == 40 - done, out
    assert summary["harness"]["questions_run"] == 40 and "partial" not in summary
    assert "interrupted:" in first_err and "run the same command again to resume" in first_err
    assert len(records.read_text().splitlines()) == 40


def test_no_socket_without_langsmith_key(
    tiny_index: Path, qa_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY", "LANGSMITH_TRACING",
                "LANGCHAIN_TRACING_V2", "LANGSMITH_ENDPOINT", "LANGCHAIN_ENDPOINT"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    opened: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        opened.append(args)
        raise OSError("network use in a test without a LangSmith key")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    common = ["--index", str(tiny_index), "--embedder", "fake/hash", "--model", "fake/script:ঢাকা"]
    res = runner.invoke(app, ["ask", "বাংলাদেশের রাজধানী কোথায়?", *common])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["eval", str(qa_file), *common, "--out", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert opened == []


def test_ablation_table_and_llm_cache(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    model = chat_model_for(fake_ctx(tiny_index))
    calls = model.calls  # type: ignore[attr-defined]
    res = runner.invoke(app, ["eval", str(qa_file), "--index", str(tiny_index), "--embedder",
                              "fake/hash", "--model", "fake/first-sentence", "--out",
                              str(run_dir), "--ablate", "--max-retries", "1"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads((run_dir / "ablation.json").read_text())
    # identical prompts are answered from the cache: far fewer calls than runs x questions
    assert model.calls - calls < len(rows) * len(QUESTIONS) // 2  # type: ignore[attr-defined]
    names = [r["name"] for r in rows]
    assert names[0].startswith("full (bm25 0.65 / dense 0.35 weighted")
    assert "no dense (BM25 only)" in names and "RRF fusion" in names
    assert "no BM25 (dense only)" in names and "no retry" in names and "no padding" in names
    assert all(r["token_f1"] is not None for r in rows)
    assert "| no dense (BM25 only) |" in res.output
    report = (run_dir / "report.md").read_text()
    assert "## Ablations" in report and (run_dir / "plots" / "ablation.png").is_file()
    assert (run_dir / "ablations" / "no-retry" / RECORDS_FILE).is_file()
    assert (run_dir / "ablations" / "no-bm25-dense-only" / RECORDS_FILE).is_file()
    header = next(line for line in res.output.splitlines() if "| name |" in line)
    assert "seconds" not in header, "memoised generations make ablation timings meaningless"


def test_models_table(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    res = runner.invoke(app, ["eval", str(qa_file), "--index", str(tiny_index), "--embedder",
                              "fake/hash", "--models", "fake/first-sentence,fake/abstain",
                              "--cross-check", "off", "--out", str(run_dir)])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = json.loads((run_dir / "models.json").read_text())
    assert [r["name"] for r in rows] == ["fake/first-sentence", "fake/abstain"]
    assert all(r["peak_rss_mib"] > 10 for r in rows)
    assert rows[1]["abstention_rate_answerable"] == 1.0


def test_bad_model_in_models_list_names_it(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", str(qa_file), "--index", str(tiny_index), "--embedder",
                              "fake/hash", "--models", "fake/abstain,nope", "--out",
                              str(tmp_path / "r")])  # fmt: skip
    assert res.exit_code == 2 and "unknown model 'nope'" in res.output
    assert not (tmp_path / "r" / "models").exists(), "names are checked before any model runs"


@pytest.mark.parametrize("models", ["", " , "])
def test_an_empty_models_list_is_an_error(
    tiny_index: Path, qa_file: Path, tmp_path: Path, models: str
) -> None:
    args = ["eval", str(qa_file), "--index", str(tiny_index), "--embedder", "fake/hash"]
    res = runner.invoke(app, [*args, "--models", models, "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "--models lists no model" in res.output


def test_report_command_rewrites_report(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    evaluate_questions(load_questions(qa_file), fake_ctx(tiny_index), run_dir, progress=False)
    res = runner.invoke(app, ["eval", "report", str(run_dir)])
    assert res.exit_code == 0, res.output
    text = (run_dir / "report.md").read_text()
    assert "## Summary" in text and "plots/f1_by_type.png" in text
    res = runner.invoke(app, ["eval", "report", str(tmp_path)])
    assert res.exit_code == 2 and "not an eval run directory" in res.output


def test_report_never_rewrites_a_summary_from_fewer_records(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    """A break-it finding: ``eval report`` on an emptied records.jsonl replaced a summary of
    every question by one of 0, with exit code 0."""
    run_dir = tmp_path / "run"
    evaluate_questions(load_questions(qa_file), fake_ctx(tiny_index), run_dir, progress=False)
    summary = (run_dir / "summary.json").read_text()
    records = run_dir / RECORDS_FILE
    lines = records.read_text(encoding="utf-8").splitlines(keepends=True)
    for kept in (lines[:1], []):
        records.write_text("".join(kept), encoding="utf-8")
        res = runner.invoke(app, ["eval", "report", str(run_dir)])
        assert res.exit_code == 2, res.output
        assert ("holds no record" if not kept else "not rewriting it from fewer") in res.output
        assert (run_dir / "summary.json").read_text() == summary


def test_generate_keeps_only_verbatim_answers(tiny_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "gen.jsonl"
    # completion-style replies continue after "Question:"; only the long document's chunks are
    # long enough to be sampled, and one question per document is kept
    script = " এখানে কী আছে?\nAnswer: কিছু তথ্য"
    res = runner.invoke(app, ["eval", "generate", "--index", str(tiny_index), "--embedder",
                              "fake/hash", "--model", f"fake/script:{script}", "--n", "2",
                              "--out", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 1, "one question per document"
    first = rows[0]
    assert first["answers"] == ["কিছু তথ্য"] and first["needs_review"] is True
    assert first["question"] == "এখানে কী আছে?" and first["doc_id"] == "long"
    assert "kept 1 of 1 drafted pairs" in res.output
    assert load_questions(out)[0].doc_id == first["doc_id"]


def test_generate_bad_n(tiny_index: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["eval", "generate", "--index", str(tiny_index), "--n", "0"])
    assert res.exit_code == 2 and "--n must be > 0" in res.output


def test_generated_pairs_are_checked() -> None:
    from kbqa.evals.question_generation import check_pair, parse_pair

    chunk = "রবীন্দ্রনাথ ঠাকুর ১৯১৩ সালে নোবেল পুরস্কার পান।"
    title = "রবীন্দ্রনাথ ঠাকুর"
    assert parse_pair(" কোন সালে নোবেল পান?\nAnswer: ১৯১৩ সালে।") == ("কোন সালে নোবেল পান?", "১৯১৩ সালে")
    assert parse_pair("just text") is None
    assert check_pair("কোন সালে নোবেল পান?", "১৯১৩ সালে", chunk, title) is None
    assert check_pair("কবে পান?", "১৯১৪ সালে", chunk, title) == "answer not in chunk"
    assert check_pair("কে নোবেল পান?", "রবীন্দ্রনাথ ঠাকুর", chunk, title) == "answer in title"
    assert check_pair("১৯১৩ সালে কী হয়?", "১৯১৩ সালে", chunk, title) == "question is the answer"
    long_answer = "রবীন্দ্রনাথ ঠাকুর ১৯১৩ সালে নোবেল পুরস্কার পান"
    assert check_pair("কী হয়েছিল সেই বছর?", long_answer, chunk, "") is None
    assert check_pair("কী?", "নোবেল পুরস্কার", chunk, title) == "not a question"


def cli(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, list(args))
    return res.exit_code, res.output


def fake_eval(qa: Path, index: Path, out: Path, *extra: str) -> tuple[int, str]:
    return cli("eval", str(qa), "--index", str(index), "--embedder", "fake/hash", "--out",
               str(out), "--no-report", *extra)  # fmt: skip


def test_bad_record_in_the_middle_is_an_error_and_nothing_is_cut(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    rec = run_dir / RECORDS_FILE
    lines = rec.read_text().splitlines(keepends=True)
    for bad in ("garbage\n", "{}\n", "[1]\n", '{"qid": "x", "scores": null}\n'):
        rec.write_text(lines[0] + bad + "".join(lines[1:]))
        before = rec.read_bytes()
        code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")
        assert code == 2 and "records.jsonl:2 is not a kbqa record" in text, text
        assert "--overwrite" in text
        code, text = cli("eval", "report", str(run_dir))
        assert code == 2 and "records.jsonl:2" in text
        assert "--overwrite" not in text, "a reader of runs has no --overwrite to offer"
        assert rec.read_bytes() == before, "nothing is cut from a file with a bad line"


def test_failed_start_and_overwrite_touch_nothing(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "nope")
    assert code == 2 and not (run_dir / "config.json").exists()
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "nope", "--overwrite")
    assert code == 2 and "unknown model 'nope'" in text
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before


def test_a_question_file_named_in_no_utf8_leaves_the_run_as_it_was(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    """A break-it trial: the name was written into config.json after it was opened, so the run
    folder kept an empty config.json, and ``--overwrite`` had removed the records first."""
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/q\xff.jsonl"))
    odd.write_bytes(qa_file.read_bytes())
    run_dir = tmp_path / "run"
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    for extra in ([], ["--overwrite"]):
        code, text = fake_eval(odd, tiny_index, run_dir, "--model", "fake/abstain", *extra)
        assert code == 2 and "not valid text" in text and "rename the file" in text, text
        assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    code, text = fake_eval(odd, tiny_index, tmp_path / "new", "--model", "fake/abstain")
    assert code == 2 and not (tmp_path / "new").exists()


def test_a_second_run_into_the_same_folder_is_refused_while_the_first_writes(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    """A break-it trial: two ``kbqa eval --out rc`` at once both ran every question and wrote
    each twice into records.jsonl."""
    from kbqa.evals.run_dir import run_lock

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (tmp_path / "alias").symlink_to(run_dir)  # the same folder under another name
    with run_lock(run_dir):  # as a first run does while it writes
        for out in (run_dir, tmp_path / "alias"):
            code, text = fake_eval(qa_file, tiny_index, out, "--model", "fake/abstain")
            assert code == 2 and "another `kbqa eval` is writing" in text, text
        assert not (run_dir / RECORDS_FILE).exists()
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    assert not (tmp_path / ".run.lock").exists()  # released and removed


def test_weights_no_question_can_use_are_one_error_before_the_run(
    kb_file: Path, qa_file: Path, tmp_path: Path
) -> None:
    """A break-it trial: `--bm25-weight 0` over an index without a dense part failed once per
    question (a traceback each) before the run exited 2."""
    out = tmp_path / "idx"
    code, text = cli("index", str(kb_file), "--out", str(out))
    assert code == 0, text
    code, text = cli("eval", str(qa_file), "--index", str(out), "--no-llm", "--bm25-weight",
                     "0", "--out", str(tmp_path / "run"), "--no-report")  # fmt: skip
    assert code == 2 and "the index has no dense part" in text, text
    assert "Traceback" not in text and not (tmp_path / "run").exists()


def test_records_without_config_are_refused(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    (run_dir / "config.json").unlink()
    code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/first-sentence")
    assert code == 2 and "settings are unknown" in text


@pytest.mark.parametrize("content", ["[1, 2]", "5", '"x"', "{bad json"])
def test_corrupt_config_is_an_error(
    tiny_index: Path, qa_file: Path, tmp_path: Path, content: str
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(content)
    code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")
    assert code == 2 and "config.json" in text and "--overwrite" in text


@pytest.mark.parametrize("content", ["5", '"model"', '{"harness": 7, "model": 3}', "{bad"])
def test_report_survives_a_corrupt_summary(
    tiny_index: Path, qa_file: Path, tmp_path: Path, content: str
) -> None:
    run_dir = tmp_path / "run"
    assert fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")[0] == 0
    (run_dir / "summary.json").write_text(content)
    code, text = cli("eval", "report", str(run_dir))
    if content.startswith(("{bad", "5", '"')):
        assert code == 2 and "summary.json" in text
    else:
        assert code == 0, text


def test_every_question_failing_is_an_error(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    code, text = fake_eval(qa_file, tiny_index, tmp_path / "r", "--model", "fake/abstain",
                           "--n-ctx", "96")  # fmt: skip
    assert code == 2 and "every question failed" in text
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["abstention_correct"] == 0.0, "a failed question is not a correct abstention"


def test_models_with_the_same_folder_name_do_not_collide(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    code, text = cli("eval", str(qa_file), "--index", str(tiny_index), "--embedder", "fake/hash",
                     "--models", "fake/script:a/b,fake/script:a_b,fake/script:a/b", "--out",
                     str(tmp_path / "r"))  # fmt: skip
    assert code == 0, text
    rows = json.loads((tmp_path / "r" / "models.json").read_text())
    assert [r["name"] for r in rows] == ["fake/script:a/b", "fake/script:a_b"]
    assert len(list((tmp_path / "r" / "models").iterdir())) == 2


def test_generate_never_replaces_a_file(tiny_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "dev.qa.jsonl"
    out.write_text("reviewed questions\n")
    base = ["eval", "generate", "--index", str(tiny_index), "--embedder", "fake/hash", "--n", "2",
            "--out", str(out)]  # fmt: skip
    code, text = cli(*base, "--model", "fake/script:x")
    assert code == 2 and "exists; pass --overwrite" in text
    code, text = cli(*base, "--model", "fake/script:garbage", "--overwrite")
    assert code == 2 and "no drafted pair passed the checks" in text
    assert out.read_text() == "reviewed questions\n"


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('question,answer\n"unterminated,x\n', "malformed CSV"),
        ("question,answer\nWho,x,extra\n", "more fields than the header"),
    ],
)
def test_malformed_csv(tmp_path: Path, content: str, problem: str) -> None:
    p = tmp_path / "qa.csv"
    p.write_text(content)
    with pytest.raises(InputError, match=problem):
        load_questions(p)


def test_question_file_checks(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        load_questions(tmp_path)
    p = tmp_path / "qa.jsonl"
    p.write_text('{"qid": ["l"], "question": "x?", "answers": ["y"]}\n')
    with pytest.raises(InputError, match="'qid' must be a string"):
        load_questions(p)
    p = tmp_path / "QA.csv"
    p.write_text("Question,Answer\nx?,y\n")
    assert load_questions(p)[0].answers == ["y"], "CSV headers are case-insensitive"


def test_a_rebuilt_index_is_not_resumed_into(kb_file: Path, qa_file: Path, tmp_path: Path) -> None:
    idx, run_dir = tmp_path / "idx", tmp_path / "run"
    assert cli("index", str(kb_file), "--out", str(idx), "--embedder", "fake/hash")[0] == 0
    assert fake_eval(qa_file, idx, run_dir, "--model", "fake/abstain", "--limit", "2")[0] == 0
    manifest = json.loads((idx / "manifest.json").read_text())
    manifest["created"] = "2099-01-01T00:00:00Z"  # as if rebuilt
    (idx / "manifest.json").write_text(json.dumps(manifest))
    code, text = fake_eval(qa_file, idx, run_dir, "--model", "fake/abstain", "--limit", "2")
    assert code == 2 and "index.created" in text


def test_a_disjoint_sample_shares_no_question_with_the_other() -> None:
    from kbqa.evals.datasets import Question, select

    qs = [Question(qid=f"q{i}", question=f"question {i}?", answers=["a"], doc_id=None,
                   answerable=True, qtype=None) for i in range(40)]  # fmt: skip
    first = {q.qid for q in select(qs, sample=15, seed=0)}
    second = [q.qid for q in select(qs, sample=15, seed=1, disjoint_from=[0])]
    assert len(second) == len(set(second)) == 15 and not first & set(second)
    assert second != [q.qid for q in select(qs, sample=15, seed=1)]  # seed 1 alone overlaps
    assert {q.qid for q in select(qs, sample=15, seed=1)} & first
    third = {q.qid for q in select(qs, sample=10, seed=2, disjoint_from=[0, 1])}
    assert not third & first and not third & {q.qid for q in select(qs, sample=10, seed=1)}
    with pytest.raises(ValueError, match="needs --sample"):
        select(qs, seed=1, disjoint_from=[0])
    with pytest.raises(ValueError, match="own --seed"):
        select(qs, sample=5, seed=1, disjoint_from=[1])
    assert len(select(qs, sample=30, seed=1, disjoint_from=[0])) == 10  # what is left
    with pytest.raises(ValueError, match="leaves no question: its samples of 40 cover all 40"):
        select(qs, sample=40, seed=1, disjoint_from=[0])


def test_disjoint_from_on_the_command_line(tiny_index: Path, qa_file: Path, tmp_path: Path) -> None:
    base = ["eval", "run", str(qa_file), "--index", str(tiny_index), "--embedder", "fake/hash",
            "--model", "fake/first-sentence", "--sample", "3", "--no-report"]  # fmt: skip
    env = {"HF_HUB_OFFLINE": "1"}
    done = runner.invoke(app, [*base, "--out", str(tmp_path / "a")], env=env)
    assert done.exit_code == 0, done.output
    done = runner.invoke(
        app, [*base, "--seed", "1", "--disjoint-from", "0", "--out", str(tmp_path / "b")], env=env
    )
    assert done.exit_code == 0, done.output

    def qids(run: str) -> set[str]:
        lines = (tmp_path / run / RECORDS_FILE).read_text(encoding="utf-8").splitlines()
        return {json.loads(x)["qid"] for x in lines}

    assert len(qids("a")) == len(qids("b")) == 3 and not qids("a") & qids("b")
    config = json.loads((tmp_path / "b" / "config.json").read_text(encoding="utf-8"))
    assert config["disjoint_from"] == [0]
    bad = runner.invoke(app, [*base, "--disjoint-from", "zero", "--out", str(tmp_path / "c")])
    assert bad.exit_code == 2 and "--disjoint-from takes comma-separated seeds" in bad.output
    bad = runner.invoke(app, [*base, "--disjoint-from=-1", "--seed", "1", "--out",
                              str(tmp_path / "c")])  # fmt: skip
    assert bad.exit_code == 2 and "--disjoint-from takes seeds >= 0" in bad.output
    assert not (tmp_path / "c").exists()
    # the same seeds in another order or repeated are the same run: it resumes
    again = runner.invoke(app, [*base, "--seed", "1", "--disjoint-from", "0,0", "--out",
                                str(tmp_path / "b")], env=env)  # fmt: skip
    assert again.exit_code == 0, again.output


def test_a_run_folder_on_a_read_only_mount_is_named_as_such(
    tiny_index: Path, qa_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(*args: object, **kwargs: object) -> None:
        raise PermissionError(30, "Read-only file system")

    # a read-only mount refuses even root, which os.access and chmod do not show
    monkeypatch.setattr("kbqa.paths.tempfile.TemporaryFile", read_only)
    run_dir = tmp_path / "run"
    code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "fake/abstain")
    assert code == 2, text
    assert f"cannot write the run to {run_dir}: folder is not writable (Read-only" in text
    assert list(run_dir.iterdir()) == []


def test_an_empty_out_and_a_bad_verifier_stop_the_run_before_it_starts(
    tiny_index: Path, qa_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    code, text = cli("eval", str(qa_file), "--index", str(tiny_index), "--embedder", "fake/hash",
                     "--model", "fake/abstain", "--out", "", "--no-report")  # fmt: skip
    assert code == 2 and "--out is empty" in text, text
    assert list(cwd.iterdir()) == [], "nothing written into the current folder"
    run_dir = tmp_path / "run"
    for extra in (["--verifier-model", "nope"], ["--verifier-adapter", str(tmp_path / "x.gguf")]):
        code, text = fake_eval(qa_file, tiny_index, run_dir, "--model", "gemma3-270m", *extra)
        assert code == 2 and "warning:" not in text, text
        assert "unknown model 'nope'" in text or "x.gguf" in text, text
        assert not run_dir.exists()


def test_an_out_through_a_file_or_a_broken_link_is_named(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    code, text = fake_eval(
        qa_file, tiny_index, tmp_path / "afile" / "run", "--model", "fake/abstain"
    )
    assert code == 2 and f"{tmp_path / 'afile'} is a file" in text, text
    code, text = fake_eval(qa_file, tiny_index, tmp_path / "dangling", "--model", "fake/abstain")
    assert code == 2 and "is a broken link" in text, text
    assert (tmp_path / "afile").read_text() == "x" and not (tmp_path / "nowhere").exists()


def test_english_read_by_its_own_reader_in_an_eval_run(
    tiny_index: Path, qa_file: Path, tmp_path: Path
) -> None:
    """Issue 32 part 7: ``--model-en`` reads the English questions of a run, the summary names
    both readers, and ``--models`` (one model per process) refuses it."""
    qs = [q for q in load_questions(qa_file) if q.qid in ("q1", "q3")]  # Bangla, English
    ctx = fake_ctx(tiny_index, model="fake/script:ঢাকা#eval-bn", model_en="fake/script:Paris#eval-en",
                   cross_check="off", web_search="off")  # fmt: skip
    run = evaluate_questions(qs, ctx, tmp_path / "run", progress=False)
    assert {r["qid"]: r["answer"] for r in run.records} == {"q1": "ঢাকা", "q3": "Paris"}
    assert run.summary["model"] == "fake/script:ঢাকা#eval-bn"
    assert run.summary["model_en"] == "fake/script:Paris#eval-en"
    plain = evaluate_questions(qs, fake_ctx(tiny_index), tmp_path / "plain", progress=False)
    assert "model_en" not in plain.summary
    res = runner.invoke(app, ["eval", str(qa_file), "--index", str(tiny_index), "--embedder",
                              "fake/hash", "--models", "fake/abstain", "--model-en",
                              "fake/abstain", "--out", str(tmp_path / "r")])  # fmt: skip
    assert res.exit_code == 2 and "not with --models" in res.output


def test_the_default_run_folder_names_the_english_reader(tmp_path: Path) -> None:
    from kbqa.cli.evaluate import _default_run_dir

    questions = tmp_path / "set" / "qa.jsonl"
    folders = [
        _default_run_dir(
            questions, Context(index_dir=str(tmp_path), model="m", **extra), False, None
        )
        for extra in ({}, {"model_en": "e"}, {"reader_adapter_en": "/x/ad_thr"})
    ]
    assert [f.name for f in folders] == [
        "eval-set-qa-m", "eval-set-qa-m-en-e", "eval-set-qa-m-en-m-ad_thr"
    ]  # fmt: skip


def test_a_torn_last_record_is_left_out_with_a_warning_and_cut_only_on_repair(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run killed mid-write leaves a torn last line: a reader (``load_run``: repair off) left
    it out silently; it now says so, and only ``kbqa eval`` (repair on) cuts it."""
    from kbqa.evals.run_dir import read_records

    path = tmp_path / RECORDS_FILE
    record = {"answerable": True, "abstained": False, "answer": "x", "gold": ["x"], "route": [],
              "stage_answers": [], "retrieved_doc_ids": [], "scores": {}, "seconds": 0.1,
              "timings": []}  # fmt: skip
    good = "".join(json.dumps({"qid": q, **record}) + "\n" for q in ("1", "2"))
    path.write_text(good + '{"qid": "3", "ans', encoding="utf-8")
    with caplog.at_level("WARNING", logger="kbqa"):
        assert list(read_records(path, repair=False)) == ["1", "2"]
    assert "torn last record" in caplog.text and "left out of these figures" in caplog.text
    assert path.read_text(encoding="utf-8").endswith('"ans')  # a reader changes nothing
    caplog.clear()
    with caplog.at_level("WARNING", logger="kbqa"):
        assert list(read_records(path, repair=True)) == ["1", "2"]
    assert "dropping a torn last record" in caplog.text
    assert path.read_text(encoding="utf-8") == good
