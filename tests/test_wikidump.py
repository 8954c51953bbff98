"""MediaWiki XML dumps: articles only, wikitext to plain text, streamed, truncation reported."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest

from kbqa.corpus.loaders import load_documents
from kbqa.corpus.wikidump import iter_dump, wikitext_to_text
from kbqa.errors import InputError

EXPORT = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11" \
xml:lang="bn">
  <siteinfo>
    <sitename>উইকিপিডিয়া</sitename>
    <namespaces><namespace key="0" case="first-letter" /></namespaces>
  </siteinfo>
{pages}
</mediawiki>
"""
PAGE = """  <page>
    <title>{title}</title>
    <ns>{ns}</ns>
    <id>{id}</id>{redirect}
    <revision>
      <id>9{id}</id>
      <model>wikitext</model>
      <format>text/x-wiki</format>
      <text bytes="1" xml:space="preserve">{text}</text>
    </revision>
  </page>"""
ARTICLE = (
    "{{তথ্যছক শহর|নাম=ঢাকা}}\n'''ঢাকা''' [[বাংলাদেশ|বাংলাদেশের]] রাজধানী।"
    "&lt;ref&gt;সূত্র ১&lt;/ref&gt; এটি [[বুড়িগঙ্গা নদী]]র তীরে অবস্থিত।\n\n"
    "== ইতিহাস ==\n[[চিত্র:Dhaka.jpg|thumb|ঢাকার ছবি]]\nমুঘল আমলে ঢাকা সুবা বাংলার রাজধানী ছিল।\n"
    "[[বিষয়শ্রেণী:বাংলাদেশের শহর]]"
)


def dump(pages: list[dict[str, str]]) -> str:
    body = "\n".join(
        PAGE.format(
            title=p["title"],
            ns=p.get("ns", "0"),
            id=p["id"],
            redirect='\n    <redirect title="x" />' if p.get("redirect") else "",
            text=p.get("text", ""),
        )
        for p in pages
    )
    return EXPORT.format(pages=body)


PAGES = [
    {"title": "ঢাকা", "id": "1", "text": ARTICLE},
    {"title": "Dacca", "id": "2", "text": "#REDIRECT [[ঢাকা]]", "redirect": "1"},
    {"title": "আলাপ:ঢাকা", "id": "3", "ns": "1", "text": "talk page"},
    {"title": "Paris", "id": "4", "text": "'''Paris''' is the [[capital city|capital]] of France."},
    {"title": "Empty", "id": "5", "text": "{{stub}}"},
]


def test_wikitext_to_text() -> None:
    text = wikitext_to_text(ARTICLE.replace("&lt;", "<").replace("&gt;", ">"))
    assert text.startswith("ঢাকা বাংলাদেশের রাজধানী।")
    assert "বুড়িগঙ্গা নদীর তীরে" in text and "মুঘল আমলে" in text and "ইতিহাস" in text
    for gone in ("তথ্যছক", "সূত্র ১", "Dhaka.jpg", "ঢাকার ছবি", "বিষয়শ্রেণী", "{{", "[[", "'''"):
        assert gone not in text, gone


@pytest.mark.parametrize("suffix", [".xml", ".xml.bz2"])
def test_dump_articles_only(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bnwiki-pages-articles{suffix}"
    data = dump(PAGES).encode("utf-8")
    path.write_bytes(bz2.compress(data) if suffix.endswith("bz2") else data)
    skipped: list[str] = []
    docs = list(iter_dump(path, skipped=skipped))
    assert [(d.doc_id, d.title) for d in docs] == [("wiki:1", "ঢাকা"), ("wiki:4", "Paris")]
    assert docs[1].text == "Paris is the capital of France."
    assert sorted(skipped) == ["Dacca: redirect", "Empty: no text", "আলাপ:ঢাকা: namespace 1"]
    assert [d.doc_id for d in load_documents(path)] == ["wiki:1", "wiki:4"]


def test_truncated_bz2_dump(tmp_path: Path) -> None:
    path = tmp_path / "dump.xml.bz2"
    many = [{"title": f"Page {i}", "id": str(i), "text": f"Article number {i}. " * 50}
            for i in range(400)]  # fmt: skip
    data = bz2.compress(dump(many).encode(), compresslevel=1)  # 100 kB blocks: several
    path.write_bytes(data[: len(data) * 3 // 4])
    got = []
    with pytest.raises(InputError, match=r"truncated or not MediaWiki XML after \d+ articles"):
        for doc in iter_dump(path):
            got.append(doc)
    assert 0 < len(got) < 400, "the articles before the break are read"


def test_not_xml(tmp_path: Path) -> None:
    path = tmp_path / "dump.xml"
    path.write_text("this is not xml")
    with pytest.raises(InputError, match="after 0 articles"):
        list(iter_dump(path))


def test_entity_expansion_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dump.xml"
    path.write_text(
        '<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;">]>'
        "<mediawiki><page><title>&b;</title><ns>0</ns><id>1</id>"
        "<revision><text>x</text></revision></page></mediawiki>"
    )
    with pytest.raises(InputError, match="not MediaWiki XML"):
        list(iter_dump(path))
