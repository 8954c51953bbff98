"""A SQuAD-format training file (v1.1 or v2.0) as the reader's training data: a question file and a
knowledge base in kbqa's JSON Lines formats (the shape of Haque 2020's).

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

Dropped and counted: an answerable question none of whose answers occurs verbatim in its
paragraph, a blank question, and a blank paragraph with its questions. Anything else that is not
SQuAD's shape is refused, naming where it is; nothing is written then.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

from kbqa.errors import InputError
from kbqa.text import lone_surrogate

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[])")
"""An English sentence ends at ``.``, ``!`` or ``?`` (and a closing quote or bracket) before a
capital, a digit or an opening quote or bracket."""


def evidence_sentence(context: str, start: int, end: int) -> str:
    """The sentence(s) of ``context`` covering characters ``start`` to ``end``."""
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(context)), len(context)]
    first = max(b for b in bounds if b <= start)
    last = min(b for b in bounds if b >= end)
    return context[first:last].strip()


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``obj[key]``, checked to be of ``kind`` (and, for text, valid Unicode).

    Raises:
        InputError: ``obj`` is not an object, lacks ``key``, or its value is of another type.
    """
    if not isinstance(obj, dict):
        raise InputError(f"not a SQuAD file: {where} is {type(obj).__name__}, not an object")
    if key not in obj:
        raise InputError(f"not a SQuAD file: {where} has no {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InputError(f"{where}.{key} must be {names}, got {type(value).__name__}")
    if isinstance(value, str) and lone_surrogate(value):
        raise InputError(f"{where}.{key} is not valid Unicode (a lone surrogate)")
    return value


def _answers(
    qa: dict[str, Any], context: str, where: str
) -> tuple[list[str], tuple[int, int] | None]:
    """The distinct verbatim answers of ``qa`` and the span of the first."""
    answers: list[str] = []
    span = None
    given_answers = _field(qa, "answers", list, where) if "answers" in qa else []
    for i, given in enumerate(given_answers):
        text = str(_field(given, "text", str, f"{where}.answers[{i}]")).strip()
        if not text or text in answers or text not in context:
            continue
        answers.append(text)
        if span is None:
            start = given.get("answer_start")
            if not isinstance(start, int) or context[start : start + len(text)] != text:
                start = context.find(text)  # an offset that does not point at the text
            span = (start, start + len(text))
    return answers, span


def convert_squad(
    squad: Any, source: str, id_prefix: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Counter[str]]:
    """``(questions, documents, counts)`` of a parsed SQuAD file.

    Raises:
        InputError: Not SQuAD's shape (``data`` -> ``title``, ``paragraphs`` -> ``context``,
            ``qas`` -> ``id``, ``question``, ``answers``), naming where.
    """
    questions: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for a, article in enumerate(_field(squad, "data", list, "the file")):
        where = f"data[{a}]"
        title = _field(article, "title", str, where)
        url = "https://en.wikipedia.org/wiki/" + urllib.parse.quote(title, safe="()_,'-.:")
        for p, paragraph in enumerate(_field(article, "paragraphs", list, where)):
            at = f"{where}.paragraphs[{p}]"
            context = _field(paragraph, "context", str, at)
            qas = _field(paragraph, "qas", list, at)
            if not context.strip():
                counts["dropped: blank paragraph"] += 1
                counts["dropped: its questions"] += len(qas)
                continue
            doc_id = f"{id_prefix}-{a:03d}-{p:03d}"
            doc = {"doc_id": doc_id, "title": title.replace("_", " "), "text": context}
            docs.append(doc | {"source": source, "url": url})
            for i, qa in enumerate(qas):
                row = _question(qa, context, doc_id, f"{at}.qas[{i}]", counts)
                if row is None:
                    continue
                row["qid"] = f"{id_prefix}-{row['qid']}"
                if row["qid"] in seen:
                    raise InputError(f"{at}.qas[{i}]: the question id {row['qid']!r} occurs twice")
                seen.add(row["qid"])
                questions.append(row | {"source": source})
    counts["documents"] = len(docs)
    return questions, docs, counts


def _question(
    qa: Any, context: str, doc_id: str, where: str, counts: Counter[str]
) -> dict[str, Any] | None:
    qid = _field(qa, "id", (str, int), where)
    question = _field(qa, "question", str, where).strip()
    impossible = _field(qa, "is_impossible", bool, where) if "is_impossible" in qa else False
    answers, span = ([], None) if impossible else _answers(qa, context, where)
    if not question:
        counts["dropped: blank question"] += 1
        return None
    if not impossible and span is None:
        counts["dropped: no answer verbatim"] += 1
        return None
    counts["unanswerable" if impossible else "answerable"] += 1
    return {
        "qid": str(qid),
        "question": question,
        "answers": answers,
        "doc_id": doc_id,
        "answerable": not impossible,
        "qtype": None,
        "evidence": evidence_sentence(context, *span) if span else "",
    }


def write_squad_jsonl(
    squad_path: Path,
    out_dir: Path,
    prefix: str = "en_train",
    source: str = "SQuAD-train",
    id_prefix: str | None = None,
) -> tuple[Path, Path, Counter[str]]:
    """Convert ``squad_path`` into ``out_dir/<prefix>.qa.jsonl`` and ``<prefix>_kb.jsonl``. Both
    are written to temporary names and renamed into place, so a failure leaves neither.

    Ids start with ``id_prefix``, by default ``source`` made an id (``SQuAD-train`` ->
    ``squad-train``), so two files converted with their own ``source`` can be concatenated into
    one training set without two documents or questions sharing an id.

    Returns:
        ``(questions path, knowledge base path, counts)``.

    Raises:
        InputError: ``prefix`` is not a plain file name; ``out_dir`` is a file; the input is
            missing, not JSON, not SQuAD's shape, one of the outputs, or keeps no question.
    """
    if not prefix or prefix.startswith(".") or re.search(r"[/\\\x00]", prefix):
        raise InputError(f"--prefix {prefix!r} must be a plain file name (no '/', not hidden)")
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"--out {out_dir} is a file, not a folder")
    paths = out_dir / f"{prefix}.qa.jsonl", out_dir / f"{prefix}_kb.jsonl"
    for path in paths:
        if path.exists() and not path.is_file():
            raise InputError(f"{path} exists and is not a file")
    if any(p.exists() and p.resolve() == Path(squad_path).resolve() for p in paths):
        raise InputError(f"{squad_path} would be overwritten by the output: choose another --out")
    try:
        squad = json.loads(Path(squad_path).read_bytes().decode("utf-8"))
    except OSError as e:
        raise InputError(f"cannot read {squad_path}: {e.strerror or e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise InputError(f"{squad_path} is not a JSON file in UTF-8: {e}") from e
    id_prefix = id_prefix or re.sub(r"[^0-9a-z]+", "-", source.lower()).strip("-") or "squad"
    questions, docs, counts = convert_squad(squad, source, id_prefix)
    if not questions:
        raise InputError(f"{squad_path}: no question kept ({dict(counts) or 'no paragraph'})")
    out_dir.mkdir(parents=True, exist_ok=True)
    staged = [p.with_name(f".{p.name}.tmp") for p in paths]
    try:
        for path, rows in zip(staged, (questions, docs), strict=True):
            path.write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8"
            )
        for tmp, path in zip(staged, paths, strict=True):
            os.replace(tmp, path)
    finally:
        for tmp in staged:
            tmp.unlink(missing_ok=True)
    return paths[0], paths[1], counts
