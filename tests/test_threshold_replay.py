"""benchmarks/threshold_replay.py: a lower threshold turns exactly the readings whose recorded
abstention probability reaches it into abstentions; the run's own threshold replays the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.datasets import load_questions
from kbqa.evals.run_dir import load_run, run_config
from kbqa.evals.runner import evaluate_questions
from kbqa.llm.fake import ScriptedChatModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import threshold_replay

QUESTIONS = [("1", "বাংলাদেশের রাজধানী কোথায়?", "ঢাকা"), ("2", "পদ্মা কী?", "বাংলাদেশের একটি প্রধান নদী"),
             ("3", "Where does Paris lie?", "Seine")]  # fmt: skip
PROBABILITY = {"1": 0.3, "2": 0.6, "3": 0.05}


class GoldReader(ScriptedChatModel):
    """Answers each question of :data:`QUESTIONS` with its gold answer, whatever the order the
    evaluation asks them in."""

    model_name: str = "fake/gold"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        prompt = str(messages[-1].content)
        answer = next(a for _, q, a in QUESTIONS if f"Question: {q}" in prompt)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=answer))])


@pytest.fixture
def run(tiny_index: Path, tmp_path: Path) -> Path:
    qa = tmp_path / "qa.jsonl"
    rows = (json.dumps({"qid": i, "question": q, "answers": [a]}, ensure_ascii=False)
            for i, q, a in QUESTIONS)  # fmt: skip
    qa.write_text("".join(row + "\n" for row in rows))
    from kbqa.resources import Resources

    ctx = Context(index_dir=str(tiny_index), model="fake/abstain", embedder="fake/hash",
                  abstention_threshold=0.9, cross_check="off", reading="joint",
                  resources=Resources(reader=GoldReader()))  # fmt: skip
    out = tmp_path / "run"
    config = run_config(qa, None, ctx)
    evaluate_questions(load_questions(qa), ctx, out, config=config, upload=False, progress=False)
    # a scripted reader decides no threshold: write what a tuned reader would have recorded
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert {r["qid"]: r["answer"] for r in records} == {i: a for i, _, a in QUESTIONS}
    for r in records:
        r["abstention_probability"] = PROBABILITY[r["qid"]]
    (out / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                               for r in records))  # fmt: skip
    return out


def test_a_lower_threshold_abstains_where_the_probability_reaches_it(
    run: Path, tmp_path: Path
) -> None:
    rows = dict(threshold_replay.replay(str(run), [0.5, 0.2], save=tmp_path / "kept"))
    assert rows["replayed at 0.9 (its own)"]["token_f1"] == rows["recorded run"]["token_f1"] == 1.0
    assert rows["replayed at 0.5"]["abstention_rate_answerable"] == pytest.approx(1 / 3, abs=1e-3)
    assert rows["replayed at 0.2"]["abstention_rate_answerable"] == pytest.approx(2 / 3, abs=1e-3)
    # --save keeps each replay as a run folder that reads back with the same figures
    kept = load_run(tmp_path / "kept" / "t0.2")
    abstained = {r["qid"]: r["abstained"] for r in kept.records}  # (records finish in any order)
    assert abstained == {"1": True, "2": True, "3": False}
    # each record says the threshold it was replayed at and the probability it was read with
    assert {r["abstention_threshold"] for r in kept.records} == {0.2}
    assert {r["qid"]: r["abstention_probability"] for r in kept.records} == PROBABILITY
    assert not (tmp_path / "kept" / "t0.9").exists()  # the run's own threshold is not kept


def test_a_threshold_above_the_runs_own_is_refused(run: Path) -> None:
    with pytest.raises(SystemExit, match="above the run's own"):
        threshold_replay.replay(str(run), [0.95])


def test_an_own_threshold_other_than_the_records_is_refused(run: Path) -> None:
    """The records say they were read at 0.9: replaying them as read at 0.95 would invent
    answers the reader never gave."""
    with pytest.raises(SystemExit, match=r"--own 0\.95 is not the threshold"):
        threshold_replay.replay(str(run), [0.5], own=0.95)


def test_the_command_line_refuses_bad_thresholds_with_status_2(run: Path, tmp_path: Path) -> None:
    import subprocess

    script = Path(threshold_replay.__file__)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args, said in (
        (["--thresholds", "0.5,0.50000001"], "names a threshold twice"),
        (["--thresholds", "0.5", "--save", str(afile)], "is a file, not a folder"),
        (["--thresholds", "0.95"], "above the run's own"),
    ):
        done = subprocess.run([sys.executable, str(script), str(run), *args],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
    assert afile.read_text() == "x"


def test_a_probability_that_is_not_one_is_refused(run: Path) -> None:
    records = run / "records.jsonl"
    rows = [json.loads(x) for x in records.read_text().splitlines()]
    for bad in ("high", float("nan"), 1.5):
        rows[1]["abstention_probability"] = bad
        records.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        with pytest.raises(SystemExit, match="abstention_probability must be a number in"):
            threshold_replay.replay(str(run), [0.5])


def test_a_record_without_its_question_or_stage_answers_is_refused(run: Path) -> None:
    records = run / "records.jsonl"
    good = [json.loads(x) for x in records.read_text().splitlines()]
    for field, bad in (("question", None), ("stage_answers", [{"stage": "generate"}]),
                       ("stage_answers", "generate")):  # fmt: skip
        rows = [dict(r) for r in good]
        if bad is None:
            del rows[1][field]
        else:
            rows[1][field] = bad
        records.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        # the run folder's reader refuses some of these lines itself (a KBQAError, which the
        # command prints as an error); the replay refuses the rest
        refused = r"record 2 of .*needs a question \(text\) and|:2 is not a kbqa"
        with pytest.raises((SystemExit, KBQAError), match=refused):
            threshold_replay.replay(str(run), [0.5])


def test_a_run_of_unanswerable_questions_only_prints_its_table(
    tiny_index: Path, tmp_path: Path
) -> None:
    """A trap set holds no answerable question: its answerable figures are None, printed as
    ``-`` (the table used to fail formatting them)."""
    import subprocess

    qa = tmp_path / "traps.qa.jsonl"
    rows = (json.dumps({"qid": i, "question": q, "answers": [], "answerable": False},
                       ensure_ascii=False) for i, q, _ in QUESTIONS)  # fmt: skip
    qa.write_text("".join(row + "\n" for row in rows))
    ctx = Context(index_dir=str(tiny_index), model="fake/script:ঢাকা|নদী|Seine",
                  embedder="fake/hash", abstention_threshold=0.9, cross_check="off",
                  reading="joint")  # fmt: skip
    out = tmp_path / "run"
    evaluate_questions(load_questions(qa), ctx, out, config=run_config(qa, None, ctx),
                       upload=False, progress=False)  # fmt: skip
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    for r in records:
        r["abstention_probability"] = PROBABILITY[r["qid"]]
    (out / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                               for r in records))  # fmt: skip
    done = subprocess.run([sys.executable, str(Path(threshold_replay.__file__)), str(out),
                           "--thresholds", "0.5"], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # at 0.5 only question 2 (p 0.6) is abstained on: a third of the unanswerable ones
    assert "| replayed at 0.5 | - / - | - / 33.3% |" in done.stdout, done.stdout


def test_readings_of_each_hit_are_given_in_turn() -> None:
    """Under --reading each a record holds one reading a hit; the stand-in reader gives them in
    the order the graph asks for them, each decided by the threshold on its own."""
    from kbqa.llm.fake import ScriptedChatModel

    record = {"stage_answers": [{"stage": "generate", "answer": "b"}],
              "abstention_probability": 0.1,
              "readings": [{"answer": "a", "abstention_probability": 0.3},
                           {"answer": "b", "abstention_probability": 0.1}]}  # fmt: skip
    assert threshold_replay._first_readings(record) == [("a", 0.3), ("b", 0.1)]
    assert threshold_replay._first_readings({**record, "readings": []}) == [("b", 0.1)]
    english = {**record, "readings": [{"answer": "No answer", "abstained": True,
                                       "abstention_probability": 0.9}]}  # fmt: skip
    assert threshold_replay._first_readings(english) == [("", 0.9)]  # abstains in any phrase
    reader = threshold_replay.ReplayReader(
        real=ScriptedChatModel.from_name("fake/abstain"), readings={"q?": [("a", 0.3), ("b", 0.1)]},
        threshold=0.2, phrase="NONE")  # fmt: skip
    said = [reader.invoke("Question: q?\nAnswer:").content for _ in range(3)]
    assert said == ["NONE", "b", "NONE"]


@pytest.mark.parametrize(
    "readings",
    [[{"answer": "x", "abstention_probability": None}], 0, False, {},
     [{"answer": None, "abstention_probability": 0.2}],
     [{"answer": "x", "abstention_probability": True}],
     [{"answer": "x", "abstention_probability": 0.2, "abstained": "false"}],
     [{"answer": "x", "abstention_probability": 0.2, "abstained": None}]],
)  # fmt: skip
def test_malformed_readings_are_refused(run: Path, readings: Any) -> None:
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    records[1]["readings"] = readings
    (run / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                               for r in records))  # fmt: skip
    with pytest.raises(SystemExit, match=r"record 2 .*readings must be a list of objects"):
        threshold_replay.replay(str(run), [0.5])


def _as_each_run(run: Path, readings: list[tuple[str, float]], stop: float) -> None:
    """Make the fixture's run one read hit by hit (--reading each, --stop-reading-below
    ``stop``), question 1 with ``readings``."""
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    first_question = next(r for r in records if r["qid"] == "1")
    first_question["readings"] = [{"answer": a, "abstention_probability": p} for a, p in readings]
    (run / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                               for r in records))  # fmt: skip
    config = json.loads((run / "config.json").read_text())
    config["context"] |= {"reading": "each", "stop_reading_below": stop}
    (run / "config.json").write_text(json.dumps(config, ensure_ascii=False))


def test_a_setting_replaces_the_runs_in_the_replays(run: Path) -> None:
    """--set: a setting that decides from what the reader said (which reading answers) is
    replayed without the reader."""
    # question 1 (gold ঢাকা) reads ঢাকা's page first, then the river's, surer of the river
    _as_each_run(run, [("ঢাকা", 0.3), ("পদ্মা", 0.1), ("পদ্মা", 0.2)], stop=0.0)
    answers = {}
    for name, stop in (("surest", 0.0), ("first", 0.5)):
        rows = threshold_replay.replay(str(run), [0.8], save=run.parent / name,
                                       overrides={"stop_reading_below": stop})  # fmt: skip
        assert rows[-1][0] == f"replayed at 0.8, stop_reading_below={stop}"
        kept = load_run(run.parent / name / "t0.8").records
        answers[name] = next(r for r in kept if r["qid"] == "1")
    assert answers["surest"]["answer"] == "পদ্মা" and len(answers["surest"]["readings"]) == 3
    assert answers["first"]["answer"] == "ঢাকা" and len(answers["first"]["readings"]) == 1
    with pytest.raises(SystemExit, match=r"--set: .*stop_reading_below"):
        threshold_replay.replay(str(run), [0.9], overrides={"stop_reading_below": 2})
    for changes_the_prompts in ({"k": 1}, {"reading": "joint"}, {"abstention_threshold": 0.2}):
        with pytest.raises(SystemExit, match=r"--set \w+: only stop_reading_below, cross_check"):
            threshold_replay.replay(str(run), [0.9], overrides=changes_the_prompts)


def test_a_reading_the_run_did_not_record_is_refused(run: Path) -> None:
    """A run that stopped at a sure hit (p 0.3 under its 0.5) holds no reading of the hits after
    it; replayed at 0.2 that hit abstains and the graph reads on: refused, not guessed."""
    _as_each_run(run, [("ঢাকা", 0.3)], stop=0.5)
    rows = dict(threshold_replay.replay(str(run), [0.5]))  # question 2 (p 0.6) abstains
    assert rows["replayed at 0.5"]["token_f1"] == pytest.approx(2 / 3, abs=1e-3)
    with pytest.raises(SystemExit, match=r"1 questions .* needed a reading the run did not rec"):
        threshold_replay.replay(str(run), [0.2])
    with pytest.raises(SystemExit, match="read the run again with --stop-reading-below 0"):
        threshold_replay.replay(str(run), [0.5], overrides={"stop_reading_below": 0.0})


def test_a_question_asked_twice_is_not_refused(run: Path) -> None:
    """Records that ask the same question share one list of readings (keyed by its text): the
    second asking reads the list again rather than past its end."""
    _as_each_run(run, [("ঢাকা", 0.1), ("ঢাকা", 0.2), ("ঢাকা", 0.2)], stop=0.0)  # a hit each
    config = json.loads((run / "config.json").read_text())
    qa = Path(config["questions"])
    rows = [json.loads(x) for x in qa.read_text().splitlines()]
    rows[1] |= {"question": rows[0]["question"], "answers": rows[0]["answers"]}
    qa.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    records = [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines()]
    one = next(r for r in records if r["qid"] == "1")
    for r in records:
        if r["qid"] == "2":
            r |= {k: one[k] for k in ("question", "gold", "readings", "abstention_probability")}
    (run / "records.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                               for r in records))  # fmt: skip
    rows = dict(threshold_replay.replay(str(run), [0.5]))
    assert rows["replayed at 0.5"]["token_f1"] == 1.0
