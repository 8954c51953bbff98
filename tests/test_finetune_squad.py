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


def test_evidence_is_the_sentence_around_the_answer() -> None:
    start = CONTEXT.index("2.1 million")
    assert evidence_sentence(CONTEXT, start, start + 11) == (
        "The city had 2.1 million residents in 2020."
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is not a JSON file"),
        ("[1, 2]", "not a SQuAD file"),
        ('{"data": [{"title": "T"}]}', "not a SQuAD file: expected data -> paragraphs"),
    ],
)
def test_bad_files_are_named(tmp_path: Path, text: str, message: str) -> None:
    src = tmp_path / "bad.json"
    src.write_text(text)
    with pytest.raises(InputError, match=message):
        write_squad_jsonl(src, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_the_cli_converts_and_names_a_missing_file(tmp_path: Path) -> None:
    src = tmp_path / "train.json"
    src.write_text(json.dumps(SQUAD))
    runner = CliRunner()
    done = runner.invoke(app, ["finetune", "squad", str(src), "--out", str(tmp_path / "o")])
    assert done.exit_code == 0, done.output
    assert "answerable 1" in done.output and (tmp_path / "o" / "en_train_kb.jsonl").is_file()
    missing = runner.invoke(app, ["finetune", "squad", str(tmp_path / "nope.json"), "-o", "x"])
    assert missing.exit_code == 2 and "cannot read" in missing.output
