"""Boilerplate learned from recurring blocks; precision vs coverage cleaning."""

from __future__ import annotations

import pytest

from kbqa.corpus.boilerplate import BoilerplateModel
from kbqa.corpus.loaders import Document

NAV = "Home | People | Research | Admissions"
FOOTER = "© 2026 Example University. All rights reserved."
LANGS = "English Deutsch Français বাংলা"


def page(i: int, body: str, host: str = "www.example.edu") -> Document:
    text = f"{NAV}\n{LANGS}\n{body}\nRelated to page {i}: {NAV}\n{body} continued.\n{FOOTER}"
    return Document(f"p{i}", f"Page {i}", text, f"https://{host}/p/{i}")


DOCS = [page(i, f"Unique content of page {i} about topic {i}.") for i in range(10)]


def test_recurring_blocks_are_learned_per_site() -> None:
    other = [page(i, f"Other site page {i}.", host="other.org") for i in range(2)]
    model = BoilerplateModel.fit(DOCS + other)
    assert set(model.blocks["www.example.edu"]) == {NAV, FOOTER, LANGS}
    assert model.blocks["other.org"] == {}, "2 pages are below min_docs"
    rows = model.report()
    assert {r[1] for r in rows} == {NAV, FOOTER, LANGS}
    assert all(r[2] == 10 and r[3] == 10 for r in rows)


def test_precision_removes_every_recurring_block() -> None:
    model = BoilerplateModel.fit(DOCS)
    text = model.precision_clean(DOCS[3])
    assert NAV not in text.split("\n") and FOOTER not in text and LANGS not in text
    assert "Unique content of page 3 about topic 3." in text
    assert f"Related to page 3: {NAV}" in text, "a line that merely contains boilerplate stays"


def test_coverage_removes_only_header_and_footer() -> None:
    model = BoilerplateModel.fit(DOCS)
    doc = Document("x", "X", f"{NAV}\nBody one.\n{NAV}\nBody two.\n{FOOTER}",
                   "https://www.example.edu/x")  # fmt: skip
    assert model.coverage_clean(doc) == f"Body one.\n{NAV}\nBody two."
    assert model.precision_clean(doc) == "Body one.\nBody two."


def test_pages_without_url_share_one_site() -> None:
    docs = [Document(f"d{i}", "", f"Menu\nText {i}") for i in range(5)]
    model = BoilerplateModel.fit(docs)
    assert model.precision_clean(docs[0]) == "Text 0"


def test_bad_parameters() -> None:
    with pytest.raises(ValueError, match="min_docs >= 2"):
        BoilerplateModel.fit(DOCS, min_docs=1)
