"""Write the natq training questions as a kbqa question file, their evidence sentences read back
from Haque 2020's knowledge base (the repository keeps character offsets, not Haque's text).

    python training/natq/build.py ../shared/data/bn/train/haque2020_kb.jsonl natq.qa.jsonl \
        [--mix mix.qa.jsonl --mix-sample 1000 --seed 62]

``questions.jsonl`` here: 528 Bangla questions written in our own words over 176 Haque 2020
passages (89 unanswerable but plausible), each answer an exact span of its passage, with
``evidence_span`` the ``[start, end)`` characters of the sentence holding it (None when
unanswerable). The output adds ``evidence`` (that text) and drops ``evidence_span``: the fields
``kbqa finetune reader --train`` reads. With ``--mix``, a seeded sample of another question file's
lines (``random.Random(seed).sample``; blank lines left out) comes first, as phase 10's training
file was made (docs/finetune-log.md). Exits non-zero with one line naming the file, line or
question when an input is missing or malformed, a passage is missing or given twice, a span
does not fit its passage, an answer is not in its evidence (another version of the knowledge
base), or the output would overwrite an input; the output is written whole or not at all.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _lines(path: Path) -> list[str]:
    """The lines of a JSON Lines file, each with its ``\n`` (JSON may hold U+2028 or ``\x85``
    unescaped, which ``str.splitlines`` would break at: a break-it finding), a UTF-8 BOM dropped.

    Raises:
        SystemExit: The file cannot be read as UTF-8.
    """
    try:
        text = path.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        sys.exit(f"cannot read {path}: {exc}")
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of a JSON Lines file, blank lines skipped.

    Raises:
        SystemExit: The file cannot be read, or a line is not a JSON object.
    """
    for number, line in enumerate(_lines(path), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # RecursionError: nested too deep
            sys.exit(f"{path}:{number}: not JSON ({type(exc).__name__})")
        if not isinstance(row, dict):
            sys.exit(f"{path}:{number}: not a JSON object")
        yield number, row


def _passages(kb: Path) -> dict[str, str]:
    texts: dict[str, str] = {}
    for number, doc in _rows(kb):
        doc_id, text = doc.get("doc_id"), doc.get("text")
        if not isinstance(doc_id, str) or not isinstance(text, str):
            sys.exit(f"{kb}:{number}: a passage needs a string doc_id and text")
        if doc_id in texts:
            sys.exit(f"{kb}:{number}: passage {doc_id} is given twice")
        texts[doc_id] = text
    return texts


def _evidence(row: dict[str, Any], where: str, texts: dict[str, str], kb: Path) -> str:
    """The evidence text of one question, every field checked."""
    answers, span, doc_id = row.get("answers"), row.get("evidence_span", ...), row.get("doc_id")
    if span is ... or not isinstance(row.get("answerable"), bool):
        sys.exit(f"{where}: a question needs evidence_span and answerable (true or false)")
    if not isinstance(answers, list) or not all(isinstance(a, str) and a for a in answers):
        sys.exit(f"{where}: answers must be a list of non-empty strings")
    if not isinstance(doc_id, str) or doc_id not in texts:
        sys.exit(f"{where}: passage {doc_id!r} is not in {kb}")
    if not row["answerable"]:
        if answers or span is not None:
            sys.exit(f"{where}: an unanswerable question has answers [] and evidence_span null")
        return ""
    text = texts[doc_id]
    ok = isinstance(span, list) and len(span) == 2 and all(type(i) is int for i in span)
    if not ok or not answers or not 0 <= span[0] < span[1] <= len(text):
        sys.exit(
            f"{where}: an answerable question needs answers and evidence_span [start, end) "
            f"within its passage (0-{len(text)} characters), got {span!r}"
        )
    evidence = text[span[0] : span[1]]
    if not any(a in evidence for a in answers):
        sys.exit(f"{where}: no answer in its evidence: is {kb} Haque 2020's?")
    return evidence


def build(kb: Path, questions: Path, out: Path, first: Sequence[str] = ()) -> int:
    """Write ``out``: the lines ``first``, then ``questions`` read with the knowledge base
    ``kb``; the number of questions written.

    Raises:
        SystemExit: As the module says, before ``out`` is touched.
    """
    try:
        if out.resolve() in (kb.resolve(), questions.resolve()):
            sys.exit(f"{out} is an input: write the question file elsewhere")
        if not out.parent.is_dir() or out.is_symlink() or (out.exists() and not out.is_file()):
            sys.exit(f"cannot write {out}: its folder is missing, or it is a link or not a file")
    except OSError as exc:  # a name too long, a loop of links
        sys.exit(f"cannot write {out}: {exc}")
    texts = _passages(kb)
    rows = []
    for number, row in _rows(questions):
        evidence = _evidence(row, f"{questions}:{number} ({row.get('qid')})", texts, kb)
        rows.append({k: v for k, v in row.items() if k != "evidence_span"} | {"evidence": evidence})
    lines = [line if line.endswith("\n") else line + "\n" for line in first if line.strip()]
    lines += [json.dumps(r, ensure_ascii=False) + "\n" for r in rows]
    tmp: Path | None = None
    try:
        prefix = f".{out.name[:64]}."
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=out.parent, prefix=prefix, suffix=".tmp", delete=False
        ) as fh:
            tmp = Path(fh.name)
            fh.write("".join(lines))
        tmp.replace(out)
    except (OSError, UnicodeEncodeError) as exc:  # a half surrogate pair cannot be UTF-8
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        sys.exit(f"cannot write {out}: {exc}")
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kb", type=Path, help="haque2020_kb.jsonl")
    parser.add_argument("out", type=Path, help="the question file to write")
    parser.add_argument("--questions", type=Path, default=HERE / "questions.jsonl")
    parser.add_argument("--mix", type=Path, help="a question file to sample first")
    parser.add_argument("--mix-sample", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=62)
    args = parser.parse_args()
    first: list[str] = []
    if args.mix:
        if args.mix.resolve() == args.out.resolve():
            sys.exit(f"{args.out} is an input: write the question file elsewhere")
        if args.mix_sample < 0:
            sys.exit(f"--mix-sample must be 0 or more, got {args.mix_sample}")
        numbered = list(enumerate(_lines(args.mix), 1))
        lines = [line for _, line in numbered if line.strip()]
        for number, line in numbered:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError):
                row = None
            if not isinstance(row, dict) or not isinstance(row.get("question"), str):
                sys.exit(f"{args.mix}: line {number} is not a JSON object with a question")
        first = random.Random(args.seed).sample(lines, min(args.mix_sample, len(lines)))
    print(f"{build(args.kb, args.questions, args.out, first)} questions -> {args.out}")


if __name__ == "__main__":
    main()
