"""Evaluation datasets: question files, CSV, sampling and LangSmith examples.

Question file format: JSON Lines with ``qid``, ``question``, ``answers`` (list of
alternatives), ``doc_id``, ``answerable``, optional ``qtype`` (all fields: :data:`KNOWN_FIELDS`).
A question is unanswerable only when it says so: ``"answerable": false`` or ``"answers": []``.
A CSV file needs ``question`` and ``answer`` columns (``answer`` may hold alternatives separated
by ``|``; an empty answer marks an unanswerable question) and may add ``qid``, ``doc_id`` and
``qtype``.
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import random
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbqa.corpus.loaders import read_jsonl_objects
from kbqa.errors import InputError
from kbqa.text import is_blank

if TYPE_CHECKING:
    from langsmith import Client
    from langsmith.schemas import Example

KNOWN_FIELDS = frozenset(
    {
        "qid",
        "question",
        "answers",
        "doc_id",
        "answerable",
        "qtype",
        "source",
        "metadata",
        # carried by the shared data sets and `kbqa eval generate`, not used in scoring
        "evidence",
        "url",
        "doc_in_partial_kb",
        "needs_review",
        "chunk_id",
    }
)
"""Fields a JSON Lines question may have; any other is an error (a misspelt ``answer`` would
otherwise make an answerable question look unanswerable)."""

EXAMPLE_NAMESPACE = uuid.UUID("6f1c3d3e-2b0a-4c51-9a57-0b8f0e0b6a11")
"""Namespace of the deterministic example ids (uuid5 of the question id)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One evaluation question.

    Attributes:
        qid: Unique id within the dataset.
        question: The question text.
        answers: Gold alternatives; empty for an unanswerable question.
        doc_id: Document that holds the answer, for doc recall@k (None if unknown).
        answerable: False when the knowledge base does not hold the answer.
        qtype: The dataset's own question type, if it has one.
    """

    qid: str
    question: str
    answers: list[str]
    doc_id: str | None = None
    answerable: bool = True
    qtype: str | None = None

    def reference(self) -> dict[str, Any]:
        """Reference outputs for evaluators: ``answers``, ``doc_id``, ``answerable``."""
        return {"answers": self.answers, "doc_id": self.doc_id, "answerable": self.answerable}


def load_questions(path: str | Path) -> list[Question]:
    """Read and validate a question file (``.jsonl`` or ``.csv``).

    Raises:
        InputError: Missing file, a line that is not UTF-8 / JSON / an object, a CSV without
            ``question`` and ``answer`` columns, a field of the wrong type (``question`` not a
            non-empty string, ``answers`` not a list of strings, ``answerable`` not a boolean),
            an unknown field (a misspelt ``answer``), no ``answers`` on a question not marked
            ``"answerable": false``, an answerable question without answers, or a repeated
            ``qid``. The message names file and line.
    """
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p} is a directory, not a question file")
    if not p.is_file():
        raise InputError(f"question file not found: {p}")
    if p.suffix.lower() == ".csv":
        out = _load_csv(p)
    else:
        out = [_parse_question(obj, p, lineno) for lineno, obj in read_jsonl_objects(p)]
    if not out:
        raise InputError(f"{p}: no questions")
    seen: set[str] = set()
    for q in out:
        if q.qid in seen:
            raise InputError(f"{p}: question id {q.qid!r} appears more than once")
        seen.add(q.qid)
    return out


def _load_csv(p: Path) -> list[Question]:
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh, strict=True)
            reader.fieldnames = [f.strip().lower() for f in reader.fieldnames or []]
            cols = set(reader.fieldnames)
            if not {"question", "answer"} <= cols:
                raise InputError(
                    f"{p}: a CSV question file needs 'question' and 'answer' columns, "
                    f"found {sorted(cols)}"
                )
            out = []
            for row in reader:
                lineno = reader.line_num
                if None in row:
                    raise InputError(f"{p}:{lineno}: more fields than the header has")
                answers = [a.strip() for a in (row.get("answer") or "").split("|") if a.strip()]
                obj: dict[str, Any] = {
                    "qid": row.get("qid") or None,
                    "question": row.get("question") or "",
                    "answers": answers,
                    "answerable": bool(answers),
                    "doc_id": row.get("doc_id") or None,
                    "qtype": row.get("qtype") or None,
                }
                out.append(_parse_question(obj, p, lineno))
            return out
    except UnicodeDecodeError as exc:
        raise InputError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise InputError(f"{p}: malformed CSV: {exc}") from None


def _parse_question(obj: dict[str, Any] | InputError, p: Path, lineno: int) -> Question:
    if isinstance(obj, InputError):
        raise obj
    where = f"{p}:{lineno}"
    question = obj.get("question")
    if not isinstance(question, str) or is_blank(question):
        raise InputError(f"{where}: 'question' must be a non-empty string")
    unknown = sorted(set(obj) - KNOWN_FIELDS)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(KNOWN_FIELDS), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InputError(
            f"{where}: unknown field {unknown[0]!r}{hint}; a question has "
            f"{', '.join(sorted(KNOWN_FIELDS - {'metadata'}))}, and your own data may go under "
            "'metadata'"
        )
    if "answers" not in obj and obj.get("answerable") is not False:
        raise InputError(
            f"{where}: no 'answers' field; give the gold answers as a list, or mark an "
            'unanswerable question with "answerable": false or "answers": []'
        )
    answers = obj.get("answers", [])
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise InputError(f"{where}: 'answers' must be a list of strings, got {answers!r:.80}")
    answerable = obj.get("answerable", bool(answers))
    if not isinstance(answerable, bool):
        raise InputError(f"{where}: 'answerable' must be true or false, got {answerable!r}")
    if answerable and not [a for a in answers if not is_blank(a)]:
        raise InputError(f"{where}: answerable question has no answers")
    doc_id = obj.get("doc_id")
    for key in ("qid", "doc_id", "qtype"):
        value = obj.get(key)
        if value is not None and (not isinstance(value, (str, int)) or isinstance(value, bool)):
            raise InputError(f"{where}: '{key}' must be a string, got {value!r:.80}")
    qid = obj.get("qid")
    return Question(
        qid=f"{p.name}:{lineno}" if qid is None or qid == "" else str(qid),
        question=question,
        answers=answers if answerable else [],
        doc_id=None if doc_id is None else str(doc_id),
        answerable=answerable,
        qtype=None if obj.get("qtype") is None else str(obj.get("qtype")),
    )


def select(
    questions: list[Question],
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    disjoint_from: Sequence[int] = (),
) -> list[Question]:
    """A seeded random sample (``sample``), then the first ``limit``.

    ``disjoint_from``: seeds whose samples of the same size (drawn from all of ``questions``)
    are left out before this one is drawn, so that a second sample shares no question with the
    first (``--sample 300 --seed 1 --disjoint-from 0``).

    Raises:
        ValueError: ``disjoint_from`` without ``sample``, holding ``seed`` itself, or leaving
            no question.
    """
    if disjoint_from:
        if sample is None:
            raise ValueError("--disjoint-from needs --sample (it leaves out other samples)")
        if seed in disjoint_from:
            raise ValueError(f"--disjoint-from {seed} is this run's own --seed")
        n = len(questions)
        taken = {
            i
            for other in disjoint_from
            for i in random.Random(other).sample(range(n), min(sample, n))
        }
        questions = [q for i, q in enumerate(questions) if i not in taken]
        if not questions:
            raise ValueError(
                f"--disjoint-from {','.join(map(str, disjoint_from))} leaves no question: "
                f"its samples of {sample} cover all {n}"
            )
    if sample is not None and sample < len(questions):
        questions = random.Random(seed).sample(questions, sample)
    return questions[:limit] if limit is not None else questions


def example_id(qid: str) -> uuid.UUID:
    """Deterministic LangSmith example id of a question (uuid5 of its ``qid``)."""
    return uuid.uuid5(EXAMPLE_NAMESPACE, qid)


def to_examples(questions: list[Question], dataset_id: uuid.UUID | None = None) -> list[Example]:
    """Questions as local LangSmith examples.

    ``inputs={"question"}``, ``outputs={"answers", "doc_id", "answerable"}``, ``metadata`` holds
    ``qid`` and ``qtype``. Ids are deterministic (:func:`example_id`), so a resumed run maps
    examples back to questions.
    """
    from langsmith.schemas import Example

    ds = dataset_id or uuid.uuid5(EXAMPLE_NAMESPACE, "local")
    now = dt.datetime.now(dt.UTC)
    return [
        Example(
            id=example_id(q.qid),
            dataset_id=ds,
            inputs={"question": q.question},
            outputs=q.reference(),
            metadata={"qid": q.qid, "qtype": q.qtype},
            created_at=now,
        )
        for q in questions
    ]


def push_dataset(name: str, questions: list[Question], client: Client) -> list[Example]:
    """Create the LangSmith dataset ``name`` or add the questions it lacks; return its examples
    for these questions.

    Examples are matched by their deterministic id, so pushing the same file twice adds nothing.
    Needs ``LANGSMITH_API_KEY`` (the client's credentials).
    """
    if client.has_dataset(dataset_name=name):
        dataset = client.read_dataset(dataset_name=name)
    else:
        dataset = client.create_dataset(
            dataset_name=name, description="kbqa questions (inputs.question, outputs.answers)"
        )
    present = {ex.id for ex in client.list_examples(dataset_id=dataset.id)}
    missing = [q for q in questions if example_id(q.qid) not in present]
    if missing:
        client.create_examples(
            dataset_id=dataset.id,
            examples=[
                {
                    "id": example_id(q.qid),
                    "inputs": {"question": q.question},
                    "outputs": q.reference(),
                    "metadata": {"qid": q.qid, "qtype": q.qtype},
                }
                for q in missing
            ],
        )
    wanted = {example_id(q.qid) for q in questions}
    return [ex for ex in client.list_examples(dataset_id=dataset.id) if ex.id in wanted]


def question_to_dict(q: Question) -> dict[str, Any]:
    """A question as a JSON-ready dict in the question-file format."""
    return asdict(q)
