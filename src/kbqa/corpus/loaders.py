"""Load knowledge-base documents from a JSON Lines file or a folder of text/Markdown/HTML files.

JSON Lines format (as ``shared/data/*/kb.jsonl``): one object per line with ``doc_id``,
``title``, ``text`` and optional ``url`` / ``source``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbqa.corpus.document import Document
from kbqa.corpus.html import decode_html, html_to_text
from kbqa.errors import InputError
from kbqa.text import is_blank

FOLDER_SUFFIXES = (".txt", ".md", ".html", ".htm")


def load_documents(
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    skipped: list[str] | None = None,
    warn: bool = True,
) -> Iterator[Document]:
    """Yield the documents of a knowledge base.

    Args:
        path: A ``.jsonl`` file, a MediaWiki XML dump (``.xml`` / ``.xml.bz2``, see
            :mod:`kbqa.corpus.wikidump`), or a folder holding ``.txt`` / ``.md`` / ``.html``
            files (searched recursively; HTML is converted to text with trafilatura).
        skip_bad_lines: Log and skip a malformed JSON Lines line, or a folder file that cannot
            be read or is not text, instead of raising.
        skipped: When given, the message of each skipped line, file or symbolic link (never
            followed in a folder) is appended to it.
        warn: Log a warning for each skipped item; False for a later pass over the same
            knowledge base, whose skips the first pass reported.

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
        yield from _load_folder(p, skip_bad_lines=skip_bad_lines, skipped=skipped, warn=warn)
    elif p.name.lower().endswith((".xml", ".xml.bz2")):
        from kbqa.corpus.wikidump import iter_dump

        yield from iter_dump(p)
    elif p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        yield from _load_jsonl(p, skip_bad_lines=skip_bad_lines, skipped=skipped, warn=warn)
    elif p.suffix.lower() in FOLDER_SUFFIXES:
        yield _load_file(p, p.parent)
    else:
        raise InputError(
            f"{p}: unsupported knowledge-base format {p.suffix!r}; "
            "give a .jsonl file, a MediaWiki .xml/.xml.bz2 dump or a folder of .txt/.md/.html "
            "files"
        )


def read_jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any] | InputError]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSON Lines file, or
    ``(line number, InputError)`` for a line that is not UTF-8, not JSON or not an object.

    A UTF-8 byte-order mark at the start of the file is ignored.

    Raises:
        InputError: The file cannot be opened or read (permissions, a directory).
    """
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    with fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    lineno,
                    InputError(
                        f"{path}:{lineno}: not valid UTF-8 "
                        f"({exc.reason} at byte {exc.start} of the "
                        "line); convert the file to UTF-8"
                    ),
                )
                continue
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                hint = " (JSON Lines needs one object per line)" if line.strip() in "[{" else ""
                yield lineno, InputError(f"{path}:{lineno}: not valid JSON ({exc.msg}){hint}")
                continue
            if not isinstance(obj, dict):
                yield (
                    lineno,
                    InputError(
                        f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}"
                    ),
                )
                continue
            yield lineno, obj


def _load_jsonl(
    path: Path, *, skip_bad_lines: bool, skipped: list[str] | None, warn: bool = True
) -> Iterator[Document]:
    import logging

    log = logging.getLogger("kbqa.corpus")
    for lineno, obj in read_jsonl_objects(path):
        try:
            if isinstance(obj, InputError):
                raise obj
            yield _parse_record(obj, path, lineno)
        except InputError as exc:
            if not skip_bad_lines:
                raise InputError(f"{exc} (use --skip-bad-lines to skip it)") from None
            if warn:
                log.warning("skipping %s", exc)
            if skipped is not None:
                skipped.append(str(exc))


def _scalar(value: Any, field: str, path: Path, lineno: int) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        raise InputError(f"{path}:{lineno}: '{field}' must be a string, got {type(value).__name__}")
    return str(value)


def _parse_record(obj: dict[str, Any], path: Path, lineno: int) -> Document:
    text = obj.get("text")
    if text is None:
        raise InputError(f"{path}:{lineno}: record has no 'text'")
    if not isinstance(text, str):
        raise InputError(f"{path}:{lineno}: 'text' must be a string, got {type(text).__name__}")
    if not text.strip():  # (text of only invisible characters is a document that the
        # chunker finds empty, counted in the build's empty_documents)
        raise InputError(f"{path}:{lineno}: record has no 'text' (it is empty)")
    raw_id = obj.get("doc_id") if obj.get("doc_id") is not None else obj.get("id")
    doc_id = _scalar(raw_id, "doc_id", path, lineno).strip() or f"{path.name}:{lineno}"
    return Document(
        doc_id=doc_id,
        title=_scalar(obj.get("title"), "title", path, lineno),
        text=text,
        url=_scalar(obj.get("url"), "url", path, lineno),
    )


def _load_folder(
    root: Path, *, skip_bad_lines: bool = False, skipped: list[str] | None = None, warn: bool = True
) -> Iterator[Document]:
    """The folder's ``.txt``/``.md``/``.html`` files, recursively, in path order.

    Symbolic links are not followed (a link may lead out of the folder, to ``/etc/passwd``);
    each one is logged and listed in ``skipped``. A file that cannot be read or is not text
    (a NUL byte, invalid UTF-8) stops the load, or with ``skip_bad_lines`` is skipped and
    listed.
    """
    import logging

    log = logging.getLogger("kbqa.corpus")

    def skip(message: str) -> None:
        if warn:
            log.warning("skipping %s", message)
        if skipped is not None:
            skipped.append(message)

    files = []
    for f in sorted(root.rglob("*")):
        if f.suffix.lower() not in FOLDER_SUFFIXES:
            continue
        if f.is_symlink():
            skip(f"{f}: a symbolic link (to {os.readlink(f)}), not followed")
        elif f.is_file():
            files.append(f)
    if not files:
        raise InputError(f"{root}: no .txt, .md or .html files found")
    for f in files:
        try:
            doc = _load_file(f, root)
        except InputError as exc:
            if not skip_bad_lines:
                raise InputError(f"{exc} (use --skip-bad-lines to skip it)") from None
            skip(str(exc))
            continue
        if not is_blank(doc.text):
            yield doc


def _load_file(f: Path, root: Path) -> Document:
    try:
        data = f.read_bytes()
    except OSError as exc:
        raise InputError(f"{f}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if b"\x00" in data[:8192]:
        raise InputError(f"{f}: a binary file, not text (it holds NUL bytes)")
    rel = f.relative_to(root).as_posix()
    if f.suffix.lower() in (".html", ".htm"):
        title, text = html_to_text(decode_html(data))
        return Document(doc_id=rel, title=title or f.stem, text=text)
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{f}: not valid UTF-8 ({exc.reason} at byte {exc.start}); convert it to UTF-8"
        ) from None
    return Document(doc_id=rel, title=f.stem.replace("_", " "), text=raw)
