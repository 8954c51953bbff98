"""Question files (JSONL, CSV) and their LangSmith examples."""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kbqa.errors import InputError
from kbqa.evals.datasets import example_id, load_questions, push_dataset, to_examples


def test_csv_questions(tmp_path: Path) -> None:
    p = tmp_path / "qa.csv"
    p.write_text(
        'question,answer,doc_id\nবাংলাদেশের রাজধানী কোথায়?,ঢাকা|ঢাকা শহর,d1\n"Who, exactly, won?",,\n',
        encoding="utf-8",
    )
    a, b = load_questions(p)
    assert a.answers == ["ঢাকা", "ঢাকা শহর"] and a.doc_id == "d1" and a.answerable
    assert b.question == "Who, exactly, won?" and not b.answerable and b.answers == []
    assert a.qid == "qa.csv:2"


def test_csv_without_answer_column(tmp_path: Path) -> None:
    p = tmp_path / "qa.csv"
    p.write_text("q,a\nx,y\n", encoding="utf-8")
    with pytest.raises(InputError, match="needs 'question' and 'answer' columns"):
        load_questions(p)


def test_csv_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "qa.csv"
    p.write_bytes("question,answer\nঢাকা?,x\n".encode("utf-16"))
    with pytest.raises(InputError, match="not UTF-8"):
        load_questions(p)


def test_duplicate_qids_are_refused(tmp_path: Path) -> None:
    p = tmp_path / "qa.jsonl"
    p.write_text('{"qid": "a", "question": "x?", "answers": ["y"]}\n' * 2)
    with pytest.raises(InputError, match="'a' appears more than once"):
        load_questions(p)


def test_examples_have_inputs_outputs_and_stable_ids(tmp_path: Path) -> None:
    p = tmp_path / "qa.jsonl"
    p.write_text('{"qid": "a", "question": "x?", "answers": ["y"], "doc_id": "d"}\n')
    (ex,) = to_examples(load_questions(p))
    assert ex.inputs == {"question": "x?"}
    assert ex.outputs == {"answers": ["y"], "doc_id": "d", "answerable": True}
    assert ex.id == example_id("a")
    assert example_id("a") == example_id("a") != example_id("b")


class FakeClient:
    """The four LangSmith client methods push_dataset uses, in memory."""

    def __init__(self) -> None:
        self.datasets: dict[str, Any] = {}
        self.examples: dict[Any, list[Any]] = {}

    def has_dataset(self, *, dataset_name: str) -> bool:
        return dataset_name in self.datasets

    def read_dataset(self, *, dataset_name: str) -> Any:
        return self.datasets[dataset_name]

    def create_dataset(self, *, dataset_name: str, description: str) -> Any:
        ds = SimpleNamespace(id=uuid.uuid4(), name=dataset_name)
        self.datasets[dataset_name] = ds
        self.examples[ds.id] = []
        return ds

    def list_examples(self, *, dataset_id: Any) -> list[Any]:
        return list(self.examples[dataset_id])

    def create_examples(self, *, dataset_id: Any, examples: list[dict[str, Any]]) -> None:
        self.examples[dataset_id] += [SimpleNamespace(**e) for e in examples]


def test_push_dataset_creates_then_updates_by_name(tmp_path: Path) -> None:
    p = tmp_path / "qa.jsonl"
    p.write_text(
        '{"qid": "a", "question": "x?", "answers": ["y"]}\n'
        '{"qid": "b", "question": "z?", "answers": []}\n'
    )
    qs = load_questions(p)
    client = FakeClient()
    got = push_dataset("bn-dev", qs[:1], client)  # type: ignore[arg-type]
    assert [e.id for e in got] == [example_id("a")]
    got = push_dataset("bn-dev", qs, client)  # type: ignore[arg-type]
    assert sorted(e.id for e in got) == sorted([example_id("a"), example_id("b")])
    (ds,) = client.datasets.values()
    assert len(client.examples[ds.id]) == 2, "pushing again adds only the missing question"
    b = next(e for e in client.examples[ds.id] if e.id == example_id("b"))
    assert b.outputs == {"answers": [], "doc_id": None, "answerable": False}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"qid": "a", "question": "x?"}', r"qa.jsonl:1: no 'answers' field"),
        (
            '{"qid": "a", "question": "x?", "answer": ["y"]}',
            r"qa.jsonl:1: unknown field 'answer' \(did you mean 'answers'\?\)",
        ),
    ],
)
def test_a_missing_or_misspelt_answers_field_is_an_error(
    tmp_path: Path, line: str, message: str
) -> None:
    p = tmp_path / "qa.jsonl"
    p.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=message):
        load_questions(p)


def test_only_an_explicit_mark_makes_a_question_unanswerable(tmp_path: Path) -> None:
    p = tmp_path / "qa.jsonl"
    p.write_text(
        '{"qid": 0, "question": "x?", "answerable": false}\n'
        '{"qid": 1, "question": "y?", "answers": []}\n'
        '{"qid": 2, "question": "z?", "answers": ["z"], "metadata": {"note": "mine"}}\n',
        encoding="utf-8",
    )
    a, b, c = load_questions(p)
    assert (a.qid, a.answerable, b.qid, b.answerable, c.qid, c.answerable) == (
        "0", False, "1", False, "2", True
    )  # fmt: skip
