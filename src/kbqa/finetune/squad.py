"""A SQuAD-format training file (v1.1 or v2.0) as the reader's training data: a question file and a
knowledge base in the ``shared/data`` JSON Lines format (the shape of Haque 2020's).

SQuAD (Rajpurkar et al. 2016, 2018; CC BY-SA 4.0) is the English extractive QA set: questions
written by crowdworkers over Wikipedia paragraphs, and in v2.0 unanswerable questions written to
match their paragraph's words (lexical traps by construction). Use its **train** split only:
XQuAD, one of kbqa's evaluation sets, is made of SQuAD v1.1 dev paragraphs.

- Questions (``<prefix>.qa.jsonl``): ``qid``, ``question``, ``answers`` (the distinct gold
  texts that occur verbatim in the paragraph), ``doc_id`` (the paragraph), ``answerable``,
  ``qtype`` (null), ``source``, ``evidence`` (the sentence holding the first answer). A v2.0
  ``is_impossible`` question keeps ``"answers": [], "answerable": false``; the reader's builder
  reads it as an abstention example over its own paragraph.
- Knowledge base (``<prefix>_kb.jsonl``): a document per paragraph, ``doc_id``, ``title``,
  ``text`` (the paragraph unchanged), ``source``, ``url`` (the English Wikipedia article).

An answerable question none of whose answers occurs verbatim in its paragraph is dropped and
counted.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

from kbqa.errors import InputError

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[])")
"""An English sentence ends at ``.``, ``!`` or ``?`` (and a closing quote or bracket) before a
capital, a digit or an opening quote or bracket."""


def evidence_sentence(context: str, start: int, end: int) -> str:
    """The sentence(s) of ``context`` covering characters ``start`` to ``end``."""
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(context)), len(context)]
    first = max(b for b in bounds if b <= start)
    last = min(b for b in bounds if b >= end)
    return context[first:last].strip()


def _answers(qa: dict[str, Any], context: str) -> tuple[list[str], tuple[int, int] | None]:
    """The distinct verbatim answers of ``qa`` and the span of the first."""
    answers: list[str] = []
    span = None
    for given in qa.get("answers") or []:
        text = str(given.get("text", "")).strip()
        if not text or text in answers or text not in context:
            continue
        answers.append(text)
        if span is None:
            start = int(given.get("answer_start", -1))
            if context[start : start + len(text)] != text:
                start = context.find(text)
            span = (start, start + len(text))
    return answers, span


def convert_squad(
    squad: dict[str, Any], source: str, id_prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """``(questions, documents, counts)`` of a parsed SQuAD file.

    Raises:
        InputError: Not SQuAD's shape (``data`` -> ``paragraphs`` -> ``context``, ``qas``).
    """
    questions: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    try:
        articles = list(squad["data"])
        for a, article in enumerate(articles):
            title = str(article["title"])
            url = "https://en.wikipedia.org/wiki/" + urllib.parse.quote(title, safe="()_,'-.:")
            for p, paragraph in enumerate(article["paragraphs"]):
                context, doc_id = str(paragraph["context"]), f"{id_prefix}-{a:03d}-{p:03d}"
                docs.append(
                    {
                        "doc_id": doc_id,
                        "title": title.replace("_", " "),
                        "text": context,
                        "source": source,
                        "url": url,
                    }
                )
                for qa in paragraph["qas"]:
                    row = _question(qa, context, doc_id, source, id_prefix, counts)
                    if row is not None:
                        questions.append(row)
    except (KeyError, TypeError) as e:
        raise InputError(
            f"not a SQuAD file: expected data -> paragraphs -> context and qas ({e!r})"
        ) from e
    counts["documents"] = len(docs)
    return questions, docs, counts


def _question(
    qa: dict[str, Any],
    context: str,
    doc_id: str,
    source: str,
    id_prefix: str,
    counts: Counter[str],
) -> dict[str, Any] | None:
    impossible = bool(qa.get("is_impossible", False))
    answers, span = ([], None) if impossible else _answers(qa, context)
    if not impossible and span is None:
        counts["dropped: no answer verbatim"] += 1
        return None
    counts["unanswerable" if impossible else "answerable"] += 1
    return {
        "qid": f"{id_prefix}-{qa['id']}",
        "question": str(qa["question"]).strip(),
        "answers": answers,
        "doc_id": doc_id,
        "answerable": not impossible,
        "qtype": None,
        "source": source,
        "evidence": evidence_sentence(context, *span) if span else "",
    }


def write_squad_jsonl(
    squad_path: Path,
    out_dir: Path,
    prefix: str = "en_train",
    source: str = "SQuAD-train",
    id_prefix: str = "squad-train",
) -> tuple[Path, Path, Counter[str]]:
    """Convert ``squad_path`` into ``out_dir/<prefix>.qa.jsonl`` and ``<prefix>_kb.jsonl``.

    Returns:
        ``(questions path, knowledge base path, counts)``.

    Raises:
        InputError: The file is missing, not JSON, not SQuAD's shape, or holds a question id
            twice.
    """
    try:
        squad = json.loads(Path(squad_path).read_text("utf-8"))
    except OSError as e:
        raise InputError(f"cannot read {squad_path}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{squad_path} is not a JSON file: {e}") from e
    if not isinstance(squad, dict):
        raise InputError(f"{squad_path}: not a SQuAD file (a JSON object with 'data' expected)")
    questions, docs, counts = convert_squad(squad, source, id_prefix)
    if len({q["qid"] for q in questions}) != len(questions):
        raise InputError(f"{squad_path}: a question id occurs twice")
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = out_dir / f"{prefix}.qa.jsonl", out_dir / f"{prefix}_kb.jsonl"
    for path, rows in zip(paths, (questions, docs), strict=True):
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return paths[0], paths[1], counts
