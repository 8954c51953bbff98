"""Load knowledge-base documents from a JSON Lines file or a folder of text/Markdown/HTML files.

JSON Lines format (as ``shared/data/*/kb.jsonl``): one object per line with ``doc_id``,
``title``, ``text`` and optional ``url`` / ``source``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kbqa.errors import InputError

FOLDER_SUFFIXES = (".txt", ".md", ".html", ".htm")


@dataclass(frozen=True, slots=True)
class Document:
    """One knowledge-base page or passage.

    Attributes:
        doc_id: Stable id (page id, URL or relative file path).
        title: Page title; may be empty.
        text: Plain text of the page.
        url: Source URL, empty when unknown.
    """

    doc_id: str
    title: str
    text: str
    url: str = ""


def load_documents(path: str | Path, *, skip_bad_lines: bool = False) -> Iterator[Document]:
    """Yield the documents of a knowledge base.

    Args:
        path: A ``.jsonl`` file or a folder holding ``.txt`` / ``.md`` / ``.html`` files
            (searched recursively; HTML is converted to text with trafilatura).
        skip_bad_lines: For JSON Lines, log and skip a malformed line instead of raising.

    Yields:
        Documents in file order.

    Raises:
        InputError: The path does not exist, a line is not a JSON object or has no ``text``
            (message names file and line), or a file is not valid UTF-8.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"knowledge base not found: {p}")
    if p.is_dir():
        yield from _load_folder(p)
    elif p.suffix in (".jsonl", ".json", ".ndjson"):
        yield from _load_jsonl(p, skip_bad_lines=skip_bad_lines)
    elif p.suffix in FOLDER_SUFFIXES:
        yield _load_file(p, p.parent)
    else:
        raise InputError(
            f"{p}: unsupported knowledge-base format {p.suffix!r}; "
            "give a .jsonl file or a folder of .txt/.md/.html files"
        )


def _load_jsonl(path: Path, *, skip_bad_lines: bool) -> Iterator[Document]:
    import logging

    log = logging.getLogger("kbqa.corpus")
    try:
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    yield _parse_record(line, path, lineno)
                except InputError as exc:
                    if not skip_bad_lines:
                        raise InputError(f"{exc} (use --skip-bad-lines to skip it)") from None
                    log.warning("skipping %s", exc)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _parse_record(line: str, path: Path, lineno: int) -> Document:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
    text = obj.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{path}:{lineno}: record has no 'text'")
    doc_id = obj.get("doc_id", obj.get("id"))
    if doc_id is None or str(doc_id).strip() == "":
        doc_id = f"{path.name}:{lineno}"
    return Document(
        doc_id=str(doc_id),
        title=str(obj.get("title") or ""),
        text=text,
        url=str(obj.get("url") or ""),
    )


def _load_folder(root: Path) -> Iterator[Document]:
    files = sorted(
        f for f in root.rglob("*") if f.is_file() and f.suffix.lower() in FOLDER_SUFFIXES
    )
    if not files:
        raise InputError(f"{root}: no .txt, .md or .html files found")
    for f in files:
        doc = _load_file(f, root)
        if doc.text.strip():
            yield doc


def _load_file(f: Path, root: Path) -> Document:
    try:
        raw = f.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{f}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    rel = f.relative_to(root).as_posix()
    if f.suffix.lower() in (".html", ".htm"):
        title, text = _html_to_text(raw)
        return Document(doc_id=rel, title=title or f.stem, text=text)
    return Document(doc_id=rel, title=f.stem.replace("_", " "), text=raw)


def _html_to_text(html: str) -> tuple[str, str]:
    """Main text and title of an HTML page, extracted with trafilatura (favouring recall)."""
    import trafilatura

    text = trafilatura.extract(html, favor_recall=True, include_comments=False) or ""
    meta = trafilatura.extract_metadata(html)
    title = (meta.title if meta is not None else None) or ""
    return title, text
