"""Text and title from the document formats people keep: Markdown, PDF and Word (DOCX).

PDF and DOCX are read with the libraries LangChain's own loaders wrap (``PyPDFLoader`` is
``pypdf`` page by page; ``Docx2txtLoader`` and ``UnstructuredWordDocumentLoader`` read a DOCX's
paragraphs), directly: a loader adds a ``Document`` wrapper and its metadata, nothing this needs.
Both are the optional ``docs`` extra; Markdown is rendered with ``markdown-it-py`` (CommonMark),
a dependency of the default install.
"""

from __future__ import annotations

import io
import re

from kbqa.errors import InputError

DOCS_HINT = "install kbqa[docs]: bash scripts/setup.sh docs"
"""What a folder's skip summary says about a PDF or DOCX when the ``docs`` extra is missing."""
EXTRA_SUFFIXES = {".pdf": "pypdf", ".docx": "docx"}
"""Suffixes read through the ``docs`` extra, with the module each needs."""


def extra_available(suffix: str) -> bool:
    """The module that reads ``suffix`` files (:data:`EXTRA_SUFFIXES`) is installed."""
    import importlib.util

    return importlib.util.find_spec(EXTRA_SUFFIXES[suffix]) is not None


def markdown_to_text(source: str) -> tuple[str, str]:
    """``(title, text)`` of a Markdown page: the title is the first heading's text ("" when
    there is none); the text keeps each block on its own line with the markup removed
    (``#``, emphasis, links' targets, list markers, code fences' backticks)."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(source)
    title, lines, in_heading = "", [], False
    for tok in tokens:
        if tok.type == "heading_open":
            in_heading = True
        elif tok.type == "heading_close":
            in_heading = False
        elif tok.type == "inline":
            text = "".join(
                child.content
                if child.type in ("text", "code_inline")
                else "\n"
                if child.type in ("softbreak", "hardbreak")
                else ""
                for child in tok.children or []
            )
            if in_heading and not title:
                title = text.strip()
            lines.append(text)
        elif tok.type in ("fence", "code_block"):
            lines.append(tok.content.rstrip("\n"))
    return title, "\n".join(line for line in lines if line.strip())


def pdf_to_text(data: bytes, shown: str) -> tuple[str, str]:
    """``(title, text)`` of a PDF: the document's title field ("" when unset) and its pages'
    text, one page after another.

    Raises:
        InputError: Not a PDF pypdf can read, or encrypted.
    """
    import logging

    from pypdf import PdfReader

    quiet = logging.getLogger("pypdf")  # its warnings name no file; the error below does
    level, quiet.level = quiet.level, logging.ERROR
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise InputError(f"{shown}: an encrypted PDF; decrypt it first")
        pages = [page.extract_text() or "" for page in reader.pages]
        metadata = reader.metadata
        title = str(metadata.get("/Title") or "") if metadata is not None else ""
    except InputError:
        raise
    except Exception as exc:  # a hostile file can break a parser anywhere: one named error
        raise InputError(f"{shown}: not a readable PDF ({type(exc).__name__}: {exc})") from None
    finally:
        quiet.level = level
    return title.strip(), "\n\n".join(p.strip() for p in pages if p.strip())


def docx_to_text(data: bytes, shown: str) -> tuple[str, str]:
    """``(title, text)`` of a Word document: the core property title, else the first
    paragraph styled as a title or heading; the text is every paragraph and table cell.

    Raises:
        InputError: Not a DOCX python-docx can read.
    """
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # a bad zip, broken XML (lxml), a missing part: one named error
        raise InputError(f"{shown}: not a readable DOCX ({type(exc).__name__}: {exc})") from None
    paragraphs = [p for p in document.paragraphs if p.text.strip()]
    title = (document.core_properties.title or "").strip()
    if not title:
        styled = (
            p.text
            for p in paragraphs
            if p.style is not None and re.match(r"(Title|Heading)", p.style.name or "")
        )
        title = next(styled, "").strip()
    cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return title, "\n".join([*(p.text for p in paragraphs), *(c for c in cells if c.strip())])
