"""The unit every knowledge-base loader yields: one page or passage."""

from __future__ import annotations

from dataclasses import dataclass


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
