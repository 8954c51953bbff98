"""People's documents in a folder knowledge base (issue 36 item 1): PDF and DOCX through the
``docs`` extra, Markdown without its markup and titled by its first heading, and a skip summary
that says what to install. The files are made by the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kbqa.corpus import formats
from kbqa.corpus.loaders import load_documents
from kbqa.errors import InputError


def make_pdf(path: Path, lines: list[str], title: str = "") -> Path:
    """A one-page PDF whose text is ``lines`` (ASCII, Helvetica), with a ``/Title`` when given:
    written object by object with its cross-reference table, as the PDF 1.4 reference lays it
    out."""
    text = " ".join(f"({line}) Tj 0 -16 Td" for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {text} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< /Title ({title}) >>".encode(),
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\n" % (len(objects) + 1)
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    path.write_bytes(bytes(out))
    return path


def make_docx(path: Path) -> Path:
    import docx

    document = docx.Document()
    document.add_heading("Sonapur village", level=1)
    document.add_paragraph("Sonapur lies on the bank of the Meghna river.")
    document.add_paragraph("ঢাকা বুড়িগঙ্গা নদীর তীরে অবস্থিত।")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Founded"
    table.rows[0].cells[1].text = "1859"
    document.save(str(path))
    return path


def _docx_with_broken_xml(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.'
                    'openxmlformats.org/package/2006/content-types"><Override PartName="/word/'
                    'document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                    'wordprocessingml.document.main+xml"/></Types>')  # fmt: skip
        zf.writestr("_rels/.rels", '<?xml version="1.0"?><Relationships xmlns="http://schemas.'
                    'openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" '
                    'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                    'officeDocument" Target="word/document.xml"/></Relationships>')  # fmt: skip
        zf.writestr("word/document.xml", "<w:document <<< broken")


needs_docs = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("pypdf", "docx")), reason="the docs extra"
)


@needs_docs
def test_a_folder_of_pdf_docx_and_markdown_is_read_as_text(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    make_pdf(kb / "report.pdf", ["The Meghna river meets the Padma.", "It was 1859."], "River")
    make_pdf(kb / "untitled.pdf", ["Dhaka is the capital of Bangladesh."])
    make_docx(kb / "sonapur_notes.docx")
    (kb / "guide.md").write_text(
        "Intro line\n\n## Ahsan *Manzil*\n\nIt stands on the **Buriganga** river "
        "([map](https://example.org/map)).\n\n- built in 1872\n\n```\ncode stays\n```\n",
        encoding="utf-8",
    )
    docs = {d.doc_id: d for d in load_documents(kb)}
    assert set(docs) == {"report.pdf", "untitled.pdf", "sonapur_notes.docx", "guide.md"}
    assert docs["report.pdf"].title == "River"
    assert "The Meghna river meets the Padma." in docs["report.pdf"].text
    assert docs["untitled.pdf"].title == "untitled"  # no /Title: the file name
    word = docs["sonapur_notes.docx"]
    assert word.title == "Sonapur village"
    assert "Meghna river" in word.text and "ঢাকা বুড়িগঙ্গা" in word.text and "1859" in word.text
    md = docs["guide.md"]
    assert md.title == "Ahsan Manzil"  # the first heading, its emphasis removed
    assert "It stands on the Buriganga river (map)." in md.text
    assert not any(mark in md.text for mark in ("**", "##", "](", "```", "- built"))
    assert "built in 1872" in md.text and "code stays" in md.text


@needs_docs
def test_a_pdf_that_is_not_one_is_named_and_skippable(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (kb / "broken.docx").write_bytes(b"PK\x03\x04 not a zip")
    _docx_with_broken_xml(kb / "broken_xml.docx")
    (kb / "good.txt").write_text("Dhaka is the capital of Bangladesh.", encoding="utf-8")
    with pytest.raises(InputError, match=r"broken\.docx: not a readable DOCX"):
        list(load_documents(kb))
    skipped: list[str] = []
    docs = list(load_documents(kb, skip_bad_lines=True, skipped=skipped, warn=False))
    assert [d.doc_id for d in docs] == ["good.txt"]
    assert any("broken.pdf: not a readable PDF" in m for m in skipped), skipped
    assert any("broken.docx: not a readable DOCX" in m for m in skipped), skipped
    # a break-it trial: a zip whose document XML is broken gave lxml's traceback
    assert any("broken_xml.docx: not a readable DOCX (XMLSyntaxError" in m for m in skipped)


def test_without_the_docs_extra_a_pdf_is_skipped_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(formats, "extra_available", lambda suffix: False)
    monkeypatch.setattr("kbqa.corpus.loaders.extra_available", lambda suffix: False)
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.pdf").write_bytes(b"%PDF-1.4")
    (kb / "b.pdf").write_bytes(b"%PDF-1.4")
    (kb / "c.docx").write_bytes(b"PK")
    (kb / "d.txt").write_text("Dhaka is the capital of Bangladesh.", encoding="utf-8")
    with caplog.at_level("WARNING", logger="kbqa"):
        docs = list(load_documents(kb))
    assert [d.doc_id for d in docs] == ["d.txt"]
    summary = " ".join(r.getMessage() for r in caplog.records)
    hint = "install kbqa[docs]: bash scripts/setup.sh docs"
    assert f"2 .pdf files ({hint}): a.pdf, b.pdf" in summary
    assert f"1 .docx files ({hint}): c.docx" in summary
    with pytest.raises(InputError, match=r"a\.pdf: reading \.pdf files needs the docs extra"):
        list(load_documents(kb / "a.pdf"))


def test_markdown_without_a_heading_keeps_the_file_name_as_title(tmp_path: Path) -> None:
    (tmp_path / "sonapur_school.md").write_text("Plain *text* only.", encoding="utf-8")
    (doc,) = load_documents(tmp_path / "sonapur_school.md")
    assert (doc.title, doc.text) == ("sonapur school", "Plain text only.")
