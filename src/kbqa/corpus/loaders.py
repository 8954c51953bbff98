"""Load knowledge-base documents from a JSON Lines file, a MediaWiki dump, or a folder of text,
Markdown, HTML, PDF and Word files (PDF and DOCX with the ``docs`` extra:
:mod:`kbqa.corpus.formats`).

JSON Lines format (the evaluation data's knowledge-base format): one object per line with
``doc_id``, ``title``, ``text`` and optional ``url`` / ``source``.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kbqa.corpus.document import Document
from kbqa.corpus.formats import (
    DOCS_HINT,
    EXTRA_SUFFIXES,
    docx_to_text,
    extra_available,
    markdown_to_text,
    pdf_to_text,
)
from kbqa.corpus.html import decode_html, html_to_text
from kbqa.corpus.wikidump import DUMP_SUFFIXES
from kbqa.errors import InputError
from kbqa.text import escape_controls, is_blank, lone_surrogate

HTML_SUFFIXES = (".html", ".htm")
FOLDER_SUFFIXES = (".txt", ".md", ".markdown", *HTML_SUFFIXES, ".pdf", ".docx")
KINDS = ".txt, .md, .html, .pdf or .docx"


def load_documents(
    path: str | Path,
    *,
    skip_bad_lines: bool = False,
    skipped: list[str] | None = None,
    warn: bool = True,
    allow_hard_links: bool = False,
) -> Iterator[Document]:
    """Yield the documents of a knowledge base.

    Args:
        path: A ``.jsonl`` file, a MediaWiki XML dump (``.xml`` / ``.xml.bz2``, see
            :mod:`kbqa.corpus.wikidump`), a folder holding ``.txt`` / ``.md`` / ``.html`` /
            ``.pdf`` / ``.docx`` files (searched recursively; HTML pages become their visible
            text, as crawled pages do, whose blocks recurring across pages the index removes,
            but a lone HTML page its main content, by trafilatura, since one page shows no
            recurring block; Markdown has its markup removed and its first heading as title;
            PDF and DOCX need the ``docs`` extra), or one such file.
        skip_bad_lines: Log and skip a malformed JSON Lines line, or a folder file that cannot
            be read or is not text, instead of raising.
        skipped: When given, the message of each skipped line, file or symbolic link (never
            followed in a folder) is appended to it.
        warn: Log the skipped items (a folder: one summary); False for a later pass over the
            same knowledge base, whose skips the first pass reported.
        allow_hard_links: Read a folder's files that have more than one name (hard links),
            which may be files from outside the folder.

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
        yield from _load_folder(
            p,
            skip_bad_lines=skip_bad_lines,
            skipped=skipped,
            warn=warn,
            allow_hard_links=allow_hard_links,
        )
    elif p.name.lower().endswith(DUMP_SUFFIXES):
        from kbqa.corpus.wikidump import iter_dump

        yield from iter_dump(p)
    elif p.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        yield from _load_jsonl(p, skip_bad_lines=skip_bad_lines, skipped=skipped, warn=warn)
    elif p.suffix.lower() in FOLDER_SUFFIXES:
        if p.suffix.lower() in EXTRA_SUFFIXES and not extra_available(p.suffix.lower()):
            raise InputError(
                f"{escape_controls(str(p))}: reading {p.suffix.lower()} files "
                f"needs the docs extra: {DOCS_HINT}"
            )
        yield _load_file(p, p.parent, lone_html=True)
    else:
        raise InputError(
            f"{p}: unsupported knowledge-base format {p.suffix!r}; "
            f"give a .jsonl file, a MediaWiki .xml/.xml.bz2 dump, a {KINDS} file or a folder "
            "of them"
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
    doc = Document(
        doc_id=doc_id,
        title=_scalar(obj.get("title"), "title", path, lineno),
        text=text,
        url=_scalar(obj.get("url"), "url", path, lineno),
    )
    for field in ("doc_id", "title", "text", "url"):
        if bad := lone_surrogate(getattr(doc, field)):  # valid JSON, not text
            raise InputError(
                f"{path}:{lineno}: '{field}' holds half of a surrogate pair ({bad!a}), "
                "which is not text"
            )
    return doc


def _load_folder(
    root: Path,
    *,
    skip_bad_lines: bool = False,
    skipped: list[str] | None = None,
    warn: bool = True,
    allow_hard_links: bool = False,
) -> Iterator[Document]:
    """The folder's ``.txt``/``.md``/``.html``/``.pdf``/``.docx`` files, recursively, in path
    order.

    Only regular files that belong to the folder are read. Skipped, each for a named reason:
    symbolic links (never followed: a link may lead out of the folder, to ``/etc/passwd``);
    hard links, a regular file with more than one name, which may be a file of anywhere on the
    same disk (unless ``allow_hard_links``); what is not a regular file (a FIFO, a socket, a
    device); empty files; files of another type; PDF and DOCX files without the ``docs`` extra
    (the summary says to install it). One warning sums them up, by reason, with up
    to :data:`SUMMARY_NAMES` names, escaped (:func:`~kbqa.text.escape_controls`); ``skipped``
    gets one message per item. A file that cannot be read or is not text (a NUL byte, invalid
    UTF-8) stops the load, or with ``skip_bad_lines`` is skipped and listed.
    """
    import logging

    log = logging.getLogger("kbqa.corpus")
    reasons: dict[str, list[Path]] = {}

    def skip(f: Path, reason: str, detail: str = "") -> None:
        reasons.setdefault(reason, []).append(f)
        if skipped is not None:
            skipped.append(f"{escape_controls(str(f))}: {detail or reason}")

    files = _folder_files(root, skip, allow_hard_links=allow_hard_links)
    read = 0
    lone_html = sum(f.suffix.lower() in HTML_SUFFIXES for f in files) == 1
    for f in files:
        try:
            doc = _load_file(f, root, lone_html=lone_html)
        except InputError as exc:
            if not skip_bad_lines:
                raise InputError(f"{exc} (use --skip-bad-lines to skip it)") from None
            skip(f, "unreadable or not text (--skip-bad-lines)", str(exc))
            continue
        if is_blank(doc.text):
            skip(f, "files without text")
            continue
        read += 1
        yield doc
    if warn and reasons:
        log.warning("%s", skip_summary(root, reasons))
    if not read:
        raise InputError(
            f"{escape_controls(str(root))}: no {KINDS} file with text found"
            + (f" ({skip_summary(root, reasons)})" if reasons else "")
        )


SUMMARY_NAMES = 5
"""File names a skip summary shows for each reason."""


def skip_summary(root: Path, reasons: dict[str, list[Path]]) -> str:
    """``skipped 3 files in ROOT: 2 .pdf files (...): a.pdf, b.pdf; 1 hard links (...): x.txt``,
    names relative to the folder and escaped."""
    total = sum(len(v) for v in reasons.values())
    parts = []
    for reason, paths in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
        names = [escape_controls(p.relative_to(root).as_posix()) for p in paths[:SUMMARY_NAMES]]
        more = f" and {len(paths) - SUMMARY_NAMES} more" if len(paths) > SUMMARY_NAMES else ""
        parts.append(f"{len(paths)} {reason}: {', '.join(names)}{more}")
    return f"skipped {total} file(s) in {escape_controls(str(root))}: {'; '.join(parts)}"


def _name(text: str) -> str:
    """A file name as text a document can carry: a byte that is not UTF-8 (a lone surrogate
    as Python decodes it) written ``\\xe9``, so the name stays unique and encodable."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _folder_files(root: Path, skip: Callable[..., None], *, allow_hard_links: bool) -> list[Path]:
    """The files of ``root`` (recursively, in path order) that :func:`_load_folder` reads;
    ``skip(file, reason, detail="")`` is called for each of the others."""
    files = []
    for f in sorted(root.rglob("*")):
        if f.is_dir() and not f.is_symlink():
            continue
        if f.is_symlink():
            target = escape_controls(os.readlink(f))
            skip(f, "symbolic links (not followed)", f"a symbolic link (to {target}), not followed")
            continue
        if f.suffix.lower() not in FOLDER_SUFFIXES:
            skip(f, f"{f.suffix.lower() or 'no suffix'} files (not {KINDS})")
            continue
        if f.suffix.lower() in EXTRA_SUFFIXES and not extra_available(f.suffix.lower()):
            skip(f, f"{f.suffix.lower()} files ({DOCS_HINT})")
            continue
        st = f.lstat()
        if not stat.S_ISREG(st.st_mode):
            skip(f, "not regular files (a FIFO, socket or device)")
        elif st.st_nlink > 1 and not allow_hard_links:
            skip(
                f,
                "hard links (--allow-hard-links reads them)",
                f"a hard link ({st.st_nlink} names on this disk: it may be a file from outside "
                "the folder), not read; --allow-hard-links reads it",
            )
        elif st.st_size == 0:
            skip(f, "empty files")
        else:
            files.append(f)
    return files


def _load_file(f: Path, root: Path, *, lone_html: bool = False) -> Document:
    """One file of a folder knowledge base as a document (``doc_id``: its path in ``root``);
    an HTML file with ``lone_html`` (the knowledge base's only page) is read for its main
    content, or its visible text when that finds none.

    Raises:
        InputError: The file cannot be read, is binary or not UTF-8, or a PDF/DOCX is broken.
    """
    shown = escape_controls(str(f))  # a name with control characters prints on one line
    try:
        data = f.read_bytes()
    except OSError as exc:
        raise InputError(
            f"{shown}: cannot be read ({exc.strerror or type(exc).__name__})"
        ) from None
    rel = _name(f.relative_to(root).as_posix())
    suffix = f.suffix.lower()
    if suffix in (".pdf", ".docx"):
        title, text = (pdf_to_text if suffix == ".pdf" else docx_to_text)(data, shown)
        return Document(doc_id=rel, title=title or _name(f.stem).replace("_", " "), text=text)
    utf16_page = suffix in HTML_SUFFIXES and data[:2] in (b"\xff\xfe", b"\xfe\xff")
    if b"\x00" in data[:8192] and not utf16_page:  # a UTF-16 page has NULs; its BOM says so
        raise InputError(f"{shown}: a binary file, not text (it holds NUL bytes)")
    if suffix in HTML_SUFFIXES:
        page = decode_html(data)
        title, text = html_to_text(page, "main") if lone_html else ("", "")
        if is_blank(text):  # not lone, or no main content found (a page of links, say)
            title, text = html_to_text(page)
        return Document(doc_id=rel, title=title or _name(f.stem), text=text)
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{shown}: not valid UTF-8 ({exc.reason} at byte {exc.start}); convert it to UTF-8"
        ) from None
    if suffix in (".md", ".markdown"):
        title, text = markdown_to_text(raw)
        return Document(doc_id=rel, title=title or _name(f.stem).replace("_", " "), text=text)
    return Document(doc_id=rel, title=_name(f.stem).replace("_", " "), text=raw)
