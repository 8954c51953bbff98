"""Recurring-block (boilerplate) detection, learned from the corpus by frequency.

HybridRAG-BN's precision strategy removes headers, footers, navigation blocks and language lists;
its coverage strategy removes only the header, footer and first navigation block. Neither is
hard-coded per site here: a block (a line of cleaned text) that recurs in many pages of the same
site (same URL host) is boilerplate. :meth:`BoilerplateModel.report` lists what was learned, so a
user can check it before trusting an index built with it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from kbqa.corpus.chunking import clean_text
from kbqa.corpus.document import Document

MIN_DOCS = 3
"""A block must recur in at least this many pages of a site."""
MIN_SHARE = 0.2
"""...and in at least this share of the site's pages."""


def site_of(doc: Document) -> str:
    """The site a document belongs to: its URL host, or ``""`` without a URL."""
    return urlsplit(doc.url).netloc.lower() if doc.url else ""


def _blocks(text: str) -> list[str]:
    return clean_text(text).split("\n")


@dataclass
class BoilerplateModel:
    """Blocks that recur across the pages of each site.

    Attributes:
        min_docs: See :data:`MIN_DOCS`.
        min_share: See :data:`MIN_SHARE`.
        blocks: ``site -> {block: number of pages holding it}`` for the boilerplate blocks.
        pages: ``site -> number of pages``.
    """

    min_docs: int = MIN_DOCS
    min_share: float = MIN_SHARE
    blocks: dict[str, dict[str, int]] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)

    @classmethod
    def fit(
        cls, docs: Iterable[Document], min_docs: int = MIN_DOCS, min_share: float = MIN_SHARE
    ) -> BoilerplateModel:
        """Count, per site, the pages each block occurs in; keep the frequent ones.

        Raises:
            ValueError: ``min_docs`` < 2 or ``min_share`` outside (0, 1].
        """
        if min_docs < 2 or not 0 < min_share <= 1:
            raise ValueError(
                f"need min_docs >= 2 and 0 < min_share <= 1, got {min_docs}, {min_share}"
            )
        counts: dict[str, Counter[str]] = defaultdict(Counter)
        pages: Counter[str] = Counter()
        for doc in docs:
            site = site_of(doc)
            pages[site] += 1
            counts[site].update(set(_blocks(doc.text)))
        model = cls(min_docs=min_docs, min_share=min_share, pages=dict(pages))
        for site, counter in counts.items():
            floor = max(min_docs, min_share * pages[site])
            model.blocks[site] = {b: n for b, n in counter.items() if b and n >= floor}
        return model

    def is_boilerplate(self, block: str, site: str) -> bool:
        """``block`` (one cleaned line) recurs across ``site``'s pages."""
        return block in self.blocks.get(site, {})

    def precision_clean(self, doc: Document) -> str:
        """Aggressive cleaning (precision strategy): every recurring block removed."""
        site = site_of(doc)
        return "\n".join(b for b in _blocks(doc.text) if not self.is_boilerplate(b, site))

    def coverage_clean(self, doc: Document) -> str:
        """Light cleaning (coverage strategy): only the recurring blocks at the top of the page
        (header and first navigation block) and at its bottom (footer) are removed. A page made
        only of recurring blocks (a duplicate page, say) is kept whole: light cleaning never
        deletes a page."""
        site = site_of(doc)
        blocks = _blocks(doc.text)
        start, end = 0, len(blocks)
        while start < end and self.is_boilerplate(blocks[start], site):
            start += 1
        while end > start and self.is_boilerplate(blocks[end - 1], site):
            end -= 1
        return "\n".join(blocks[start:end] if start < end else blocks)

    def report(self, top: int | None = 20) -> list[tuple[str, str, int, int]]:
        """The ``top`` (None: all) most widespread boilerplate blocks: ``(site, block, pages
        holding it, pages of the site)``, most widespread first."""
        rows = [
            (site, block, n, self.pages[site])
            for site, blocks in self.blocks.items()
            for block, n in blocks.items()
        ]
        rows.sort(key=lambda r: (-r[2] / r[3], -r[2], r[1]))
        return rows[:top]
