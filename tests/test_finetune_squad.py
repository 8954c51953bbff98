"""A SQuAD file as reader training data: the questions and knowledge base it writes load with the
project's own loaders, unanswerable questions are kept, and bad files are named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbqa.cli import app
from kbqa.corpus.loaders import load_documents
from kbqa.errors import InputError
from kbqa.finetune.questions import load_training_questions
from kbqa.finetune.squad import evidence_sentence, write_squad_jsonl

CONTEXT = (
    "Paris is the capital of France. It lies on the Seine. "
    "The city had 2.1 million residents in 2020."
)
SQUAD = {
    "version": "v2.0",
    "data": [
        {
            "title": "Paris_(city)",
            "paragraphs": [
                {
                    "context": CONTEXT,
                    "qas": [
                        {
                            "id": "a1",
                            "question": " Which river does Paris lie on? ",
                            "answers": [
                                {"text": "the Seine", "answer_start": 41},
                                {"text": "Seine", "answer_start": 45},
                                {"text": "the Seine", "answer_start": 41},
                            ],
                            "is_impossible": False,
                        },
                        {
                            "id": "u1",
                            "question": "Which river does Lyon lie on?",
                            "answers": [],
                            "is_impossible": True,
                        },
                        {
                            "id": "x1",
                            "question": "What is the mayor's name?",
                            "answers": [{"text": "Anne Hidalgo", "answer_start": 3}],
                        },
                    ],
                }
            ],
        }
    ],
}


def test_a_squad_file_becomes_questions_and_a_knowledge_base(tmp_path: Path) -> None:
    src = tmp_path / "train.json"
    src.write_text(json.dumps(SQUAD))
    qa, kb, counts = write_squad_jsonl(src, tmp_path / "out", "en", "SQuAD2.0-train", "sq")
    assert dict(counts) == {
        "answerable": 1,
        "unanswerable": 1,
        "dropped: no answer verbatim": 1,
        "documents": 1,
    }
    questions = {tq.question.qid: tq for tq in load_training_questions(qa)}
    assert set(questions) == {"sq-a1", "sq-u1"}
    a1 = questions["sq-a1"]
    assert a1.question.question == "Which river does Paris lie on?"
    assert a1.question.answers == ["the Seine", "Seine"]  # distinct, verbatim
    assert a1.question.doc_id == "sq-000-000" and a1.evidence == "It lies on the Seine."
    u1 = questions["sq-u1"].question
    assert (u1.answerable, u1.answers, u1.doc_id) == (False, [], "sq-000-000")
    (doc,) = load_documents(kb)
    assert (doc.doc_id, doc.title, doc.text) == ("sq-000-000", "Paris (city)", CONTEXT)
    assert doc.url == "https://en.wikipedia.org/wiki/Paris_(city)"


def test_two_files_converted_with_their_own_source_share_no_id(tmp_path: Path) -> None:
    src = tmp_path / "train.json"
    src.write_text(json.dumps(SQUAD))
    ids = []
    for source in ("SQuAD2.0-train", "My SQuAD (other)"):
        qa, kb, _ = write_squad_jsonl(src, tmp_path / source.replace(" ", "_"), "en", source)
        ids.append({d.doc_id for d in load_documents(kb)})
        ids.append({tq.question.qid for tq in load_training_questions(qa)})
    assert ids[0] == {"squad2-0-train-000-000"} and ids[2] == {"my-squad-other-000-000"}
    assert not ids[0] & ids[2] and not ids[1] & ids[3]


def test_evidence_is_the_sentence_around_the_answer() -> None:
    start = CONTEXT.index("2.1 million")
    assert evidence_sentence(CONTEXT, start, start + 11) == (
        "The city had 2.1 million residents in 2020."
    )


def _with(**changes: object) -> str:
    """SQUAD with one question's fields changed (``qa__KEY``) or one paragraph's (``p__KEY``)."""
    data = json.loads(json.dumps(SQUAD))
    paragraph = data["data"][0]["paragraphs"][0]
    for key, value in changes.items():
        where, _, field = key.partition("__")
        (paragraph["qas"][0] if where == "qa" else paragraph)[field] = value
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not a JSON file"),
        ("[1, 2]", "the file is list, not an object"),
        ('{"data": [{"title": "T"}]}', r"data\[0\] has no 'paragraphs'"),
        ('{"data": null}', "data must be list, got NoneType"),
        (_with(p__qas="abc"), r"paragraphs\[0\].qas must be list"),
        (_with(p__context=None), "context must be str, got NoneType"),
        (_with(qa__answers="the Seine"), r"qas\[0\].answers must be list, got str"),
        (_with(qa__answers=["the Seine"]), r"answers\[0\] is str, not an object"),
        (_with(qa__answers=[None]), r"answers\[0\] is NoneType, not an object"),
        (_with(qa__question=None), "question must be str"),
        (_with(qa__id=None), "id must be str or int"),
        (_with(qa__is_impossible="false"), "is_impossible must be bool, got str"),
        (_with(p__context="Paris \ud800"), "context is not valid Unicode"),
        ("[" * 100_000 + "]" * 100_000, "is not a JSON file"),
        ('{"data": []}', "no question kept"),
    ],
)
def test_bad_files_are_named_and_nothing_is_written(
    tmp_path: Path, text: str, message: str
) -> None:
    src = tmp_path / "bad.json"
    src.write_text(text)
    with pytest.raises(InputError, match=message):
        write_squad_jsonl(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_an_offset_that_misses_is_found_and_blank_parts_are_dropped(tmp_path: Path) -> None:
    data = json.loads(_with(qa__answers=[{"text": "the Seine", "answer_start": "abc"}]))
    paragraphs = data["data"][0]["paragraphs"]
    paragraphs[0]["qas"].append({"id": "b1", "question": "  ", "answers": []})
    paragraphs.append({"context": " ", "qas": [{"id": "c1", "question": "Q?", "answers": []}]})
    src = tmp_path / "train.json"
    src.write_text(json.dumps(data))
    qa, _, counts = write_squad_jsonl(src, tmp_path / "out")
    assert counts["answerable"] == 1 and counts["dropped: blank question"] == 1
    assert counts["dropped: blank paragraph"] == 1 and counts["documents"] == 1
    (tq, _) = load_training_questions(qa)
    assert tq.evidence == "It lies on the Seine."


@pytest.mark.parametrize("prefix", ["", "../escaped", "/abs", ".hidden", "a\x00b"])
def test_the_prefix_is_a_plain_file_name(tmp_path: Path, prefix: str) -> None:
    src = tmp_path / "train.json"
    src.write_text(json.dumps(SQUAD))
    with pytest.raises(InputError, match="must be a plain file name"):
        write_squad_jsonl(src, tmp_path / "out", prefix)


def test_outputs_never_replace_the_input_or_half_land(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    src = out / "en_train.qa.jsonl"
    src.write_text(json.dumps(SQUAD))
    with pytest.raises(InputError, match="would be overwritten"):
        write_squad_jsonl(src, out)
    (out / "en_train_kb.jsonl").mkdir()  # the second output cannot be written
    other = tmp_path / "train.json"
    other.write_text(json.dumps(SQUAD))
    with pytest.raises(InputError, match="exists and is not a file"):
        write_squad_jsonl(other, out)
    assert json.loads(src.read_text()) == SQUAD  # untouched
    with pytest.raises(InputError, match="is a file, not a folder"):
        write_squad_jsonl(other, other)


def test_the_cli_converts_and_names_a_missing_file(tmp_path: Path) -> None:
    src = tmp_path / "train.json"
    src.write_text(json.dumps(SQUAD))
    runner = CliRunner()
    done = runner.invoke(app, ["finetune", "squad", str(src), "--out", str(tmp_path / "o")])
    assert done.exit_code == 0, done.output
    assert "answerable 1" in done.output and (tmp_path / "o" / "en_train_kb.jsonl").is_file()
    missing = runner.invoke(app, ["finetune", "squad", str(tmp_path / "nope.json"), "-o", "x"])
    assert missing.exit_code == 2 and "cannot read" in missing.output
