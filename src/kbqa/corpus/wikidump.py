"""MediaWiki XML dumps (``pages-articles.xml`` / ``.xml.bz2``) as knowledge-base documents.

Streamed with defusedxml's ``iterparse`` (entity expansion refused; each page is cleared once
read, so a multi-GB dump never sits in memory); wikitext is turned into plain text with
mwparserfromhell. Only articles are kept: namespace 0, not redirects, non-empty text. Works with
any export schema version (tags are matched without their XML namespace).
"""

from __future__ import annotations

import bz2
import contextlib
import logging
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from kbqa.corpus.document import Document
from kbqa.errors import InputError

log = logging.getLogger("kbqa.corpus")

DUMP_SUFFIXES = (".xml", ".xml.bz2")
SKIPPED_LINK_NAMESPACES = frozenset(
    {
        "file",
        "image",
        "media",
        "category",  # English
        "চিত্র",
        "ফাইল",
        "বিষয়শ্রেণী",
        "মিডিয়া",  # Bangla
    }
)
"""Wikilinks whose target is in one of these namespaces carry no article text (images,
category tags) and are removed; other links keep their visible text."""
SKIPPED_TAGS = frozenset({"ref", "references", "gallery", "math", "timeline", "score"})


def wikitext_to_text(wikitext: str) -> str:
    """Plain text of an article's wikitext.

    Templates, references, tables' markup, files and category links are dropped; links keep
    their visible text; headings keep their words. Blank lines between paragraphs are kept.
    """
    import mwparserfromhell

    code = mwparserfromhell.parse(wikitext)
    for link in code.filter_wikilinks(recursive=True):
        target = str(link.title).strip().lstrip(":")
        if ":" in target and target.split(":", 1)[0].strip().lower() in SKIPPED_LINK_NAMESPACES:
            with contextlib.suppress(ValueError):  # already gone with a removed parent
                code.remove(link)
    for tag in code.filter_tags(recursive=True):
        if str(tag.tag).strip().lower() in SKIPPED_TAGS:
            with contextlib.suppress(ValueError):
                code.remove(tag)
    text = code.strip_code(normalize=True, collapse=True)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _open(path: Path) -> IO[bytes]:
    if path.name.lower().endswith(".bz2"):
        return bz2.open(path, "rb")
    return path.open("rb")


def iter_dump(path: str | Path, *, skipped: list[str] | None = None) -> Iterator[Document]:
    """Yield the articles of a MediaWiki XML dump.

    Args:
        path: ``.xml`` or ``.xml.bz2`` export file.
        skipped: When given, a line per page skipped (redirect, other namespace, empty) is
            appended.

    Yields:
        ``Document(doc_id="wiki:<page id>", title, text, url="")`` in dump order.

    Raises:
        InputError: The file is not XML, or is truncated (the message says how many articles
            were read before the break).
    """
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import iterparse

    p = Path(path)
    read = 0
    try:
        with _open(p) as fh:
            context = iterparse(fh, events=("start", "end"))
            root = None
            for event, elem in context:
                if root is None and event == "start":
                    root = elem
                if event != "end" or _local(elem.tag) != "page":
                    continue
                doc, reason = _page(elem)
                if doc is not None:
                    read += 1
                    yield doc
                elif skipped is not None:
                    skipped.append(reason)
                elem.clear()
                if root is not None:
                    root.clear()  # drop the cleared pages from the root too
    except (EOFError, OSError, ET.ParseError, DefusedXmlException) as exc:
        raise InputError(
            f"{p}: the dump is truncated or not MediaWiki XML after {read} articles ({exc})"
        ) from None


def _page(elem: ET.Element) -> tuple[Document | None, str]:
    fields: dict[str, str] = {}
    redirect = False
    for child in elem.iter():
        name = _local(child.tag)
        if name == "redirect":
            redirect = True
        elif name in ("title", "ns", "id", "text") and name not in fields:
            fields[name] = child.text or ""
    title = fields.get("title", "")
    if fields.get("ns", "0").strip() != "0":
        return None, f"{title}: namespace {fields.get('ns')}"
    if redirect:
        return None, f"{title}: redirect"
    text = wikitext_to_text(fields.get("text", ""))
    if not text:
        return None, f"{title}: no text"
    return Document(doc_id=f"wiki:{fields.get('id', title)}", title=title, text=text), ""
