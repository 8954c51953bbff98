"""Knowledge-base loading: JSONL and folders; bad lines and encodings name file and line."""

from pathlib import Path

import pytest

from kbqa.corpus.loaders import load_documents
from kbqa.errors import InputError


def test_jsonl(kb_file: Path) -> None:
    docs = list(load_documents(kb_file))
    assert [d.doc_id for d in docs] == ["d1", "d2", "d3", "d4", "d5"]
    assert docs[2].url == "https://en.example.org/wiki/Paris"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "not valid JSON"),
        ('{"doc_id": "x", "title": "t"}', "has no 'text'"),
        ('{"doc_id": "x", "text": "   "}', "has no 'text'"),
        ("[1, 2]", "expected a JSON object"),
        # valid JSON, not text: the index failed with a traceback when it wrote it (break-it)
        ('{"doc_id": "x", "text": "Paris a\\ud800b"}', "'text' holds half of a surrogate pair"),
        ('{"doc_id": "x", "title": "\\udcff", "text": "Paris"}', "'title' holds half of a"),
    ],
)
def test_bad_line_names_file_and_line(kb_file: Path, line: str, problem: str) -> None:
    with kb_file.open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    with pytest.raises(InputError, match=rf"kb\.jsonl:6: .*{problem}.*--skip-bad-lines"):
        list(load_documents(kb_file))
    assert len(list(load_documents(kb_file, skip_bad_lines=True))) == 5


def test_non_utf8_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes('{"doc_id": "x", "text": "café"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="not valid UTF-8"):
        list(load_documents(bad))


def test_missing_and_unsupported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        list(load_documents(tmp_path / "nope.jsonl"))
    (tmp_path / "kb.odt").write_bytes(b"PK")
    with pytest.raises(InputError, match="unsupported"):
        list(load_documents(tmp_path / "kb.odt"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"no \.txt"):
        list(load_documents(tmp_path / "empty"))


def test_folder_of_text_markdown_and_html(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("ঢাকা বাংলাদেশের রাজধানী।", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# Title\n\nSome markdown text.", encoding="utf-8")
    (tmp_path / "c.html").write_text(
        "<html><head><title>Page C</title></head><body><nav>Home | About</nav>"
        "<article><p>Paris is the capital of France. It is known for the Eiffel Tower and "
        "many museums along the Seine river.</p></article></body></html>",
        encoding="utf-8",
    )
    docs = {d.doc_id: d for d in load_documents(tmp_path)}
    assert set(docs) == {"a.txt", "sub/b.md", "c.html"}
    markdown = docs["sub/b.md"]
    assert (markdown.title, markdown.text) == ("Title", "Title\nSome markdown text.")
    assert docs["c.html"].title == "Page C"
    assert "capital of France" in docs["c.html"].text
    assert "<p>" not in docs["c.html"].text


def test_utf8_bom_is_ignored(tmp_path: Path) -> None:
    kb = tmp_path / "bom.jsonl"
    kb.write_bytes(
        b"\xef\xbb\xbf" + b'{"doc_id": "a", "text": "first"}\n{"doc_id": "b", "text": "x"}\n'
    )
    assert [d.doc_id for d in load_documents(kb)] == ["a", "b"]
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "a.txt").write_bytes(b"\xef\xbb\xbfParis")
    assert next(iter(load_documents(tmp_path / "f"))).text == "Paris"


def test_non_utf8_line_is_named_and_skippable(tmp_path: Path) -> None:
    kb = tmp_path / "late.jsonl"
    good = '{"doc_id": "%d", "text": "ok"}\n'
    kb.write_bytes(
        (good % 1 + good % 2).encode() + '{"doc_id": "3", "text": "café"}\n'.encode("latin-1")
    )
    with pytest.raises(InputError, match=r"late\.jsonl:3: not valid UTF-8"):
        list(load_documents(kb))
    assert [d.doc_id for d in load_documents(kb, skip_bad_lines=True)] == ["1", "2"]


def test_html_in_declared_charset(tmp_path: Path) -> None:
    body = "<p>" + "Le café est très bon près de la Seine. " * 10 + "</p>"
    head = '<head><meta charset="iso-8859-1"><title>Café</title></head>'
    html = f"<html>{head}<body><article>{body}</article></body></html>"
    (tmp_path / "page.html").write_bytes(html.encode("latin-1"))
    doc = next(iter(load_documents(tmp_path)))
    assert "café est très bon" in doc.text


def test_non_string_fields(tmp_path: Path) -> None:
    kb = tmp_path / "kb.jsonl"
    kb.write_text('{"doc_id": "a", "text": 42}\n')
    with pytest.raises(InputError, match="'text' must be a string"):
        list(load_documents(kb))
    kb.write_text('{"doc_id": {"x": 1}, "text": "t"}\n')
    with pytest.raises(InputError, match="'doc_id' must be a string"):
        list(load_documents(kb))
    kb.write_text('{"doc_id": null, "id": "x", "text": "t"}\n{"doc_id": 7, "text": "t"}\n')
    assert [d.doc_id for d in load_documents(kb)] == ["x", "7"]


def test_a_folder_does_not_follow_symbolic_links(tmp_path: Path) -> None:
    """Issue 15 item 6: a passwd.txt link to /etc/passwd was indexed before."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.txt").write_text("ঢাকা বাংলাদেশের রাজধানী।", encoding="utf-8")
    outside = tmp_path / "secret.txt"
    outside.write_text("root:x:0:0", encoding="utf-8")
    (kb / "passwd.txt").symlink_to(outside)
    (kb / "inside.txt").symlink_to(kb / "a.txt")  # not followed either: no link is
    skipped: list[str] = []
    docs = list(load_documents(kb, skipped=skipped))
    assert [d.doc_id for d in docs] == ["a.txt"]
    assert len(skipped) == 2 and all("symbolic link" in m for m in skipped)
    assert any(str(outside) in m for m in skipped)


@pytest.mark.parametrize("kind", ["binary", "unreadable"])
def test_a_bad_folder_file_is_named_and_skippable(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.txt").write_text("ঢাকা বাংলাদেশের রাজধানী।", encoding="utf-8")
    bad = kb / "b.txt"
    if kind == "binary":
        bad.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
        problem = "a binary file"
    else:
        bad.write_text("x", encoding="utf-8")
        read_bytes = Path.read_bytes

        def denied(self: Path) -> bytes:  # chmod 0 does not stop root, who runs CI here
            if self.name == "b.txt":
                raise PermissionError(13, "Permission denied")
            return read_bytes(self)

        monkeypatch.setattr(Path, "read_bytes", denied)
        problem = "cannot be read"
    with pytest.raises(InputError, match=rf"b\.txt: {problem}.*--skip-bad-lines"):
        list(load_documents(kb))
    skipped: list[str] = []
    docs = list(load_documents(kb, skip_bad_lines=True, skipped=skipped))
    assert [d.doc_id for d in docs] == ["a.txt"] and problem in skipped[0]


def _odd_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A folder with one good file and one of each thing a folder KB must not read silently."""
    import os

    kb = tmp_path / "kb"
    (kb / "sub").mkdir(parents=True)
    (kb / "good.txt").write_text("ঢাকা বাংলাদেশের রাজধানী।", encoding="utf-8")
    outside = tmp_path / "passwd"
    outside.write_text("daemon:x:1:1:daemon:/usr/sbin", encoding="utf-8")
    os.link(outside, kb / "passwd.txt")  # a hard link to a file outside the folder
    os.mkfifo(kb / "pipe.txt")  # reading it would block for ever
    (kb / "empty.md").write_bytes(b"")
    (kb / "report.odt").write_bytes(b"PK\x03\x04")
    (kb / "sub" / "two\nlines.txt").write_text("Paris is the capital of France.", "utf-8")
    return kb, outside


def test_a_folder_reads_only_its_regular_files_and_sums_up_the_rest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 34 item 4: a hard link to /etc/passwd was indexed and served; FIFOs and empty
    files were skipped without a word; a newline in a file name split the sources line."""
    kb, _ = _odd_folder(tmp_path)
    skipped: list[str] = []
    with caplog.at_level("WARNING", logger="kbqa"):
        docs = list(load_documents(kb, skipped=skipped))
    assert sorted(d.doc_id for d in docs) == ["good.txt", "sub/two\nlines.txt"]
    assert all("daemon" not in d.text for d in docs)
    assert len(skipped) == 4 and not any("\n" in m for m in skipped)
    summaries = [r.getMessage() for r in caplog.records]
    assert len(summaries) == 1, summaries  # one summary, not a line per file
    summary = summaries[0]
    assert summary.startswith(f"skipped 4 file(s) in {kb}: ")
    for part in (
        "1 hard links (--allow-hard-links reads them): passwd.txt",
        "1 not regular files (a FIFO, socket or device): pipe.txt",
        "1 empty files: empty.md",
        "1 .odt files (not .txt, .md, .html, .pdf or .docx): report.odt",
    ):
        assert part in summary  # fmt: skip
    assert "\n" not in summary


def test_hard_links_are_read_when_allowed(tmp_path: Path) -> None:
    kb, _ = _odd_folder(tmp_path)
    docs = list(load_documents(kb, allow_hard_links=True, warn=False))
    assert "passwd.txt" in {d.doc_id for d in docs}


def test_a_folder_with_nothing_to_read_names_what_it_skipped(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.odt").write_bytes(b"PK")
    (kb / "b.txt").write_bytes(b"")
    nothing = (r"no \.txt, \.md, \.html, \.pdf or \.docx file with text found "
               r"\(skipped 2 file\(s\).*1 \.odt files.*1 empty files")  # fmt: skip
    with pytest.raises(InputError, match=nothing):
        list(load_documents(kb, warn=False))


def test_escape_controls_keeps_every_script_and_escapes_controls() -> None:
    from kbqa.text import escape_controls

    assert escape_controls("two\nlines\t\x1b[31m") == "two\\nlines\\t\\x1b[31m"
    assert escape_controls("বাংলা\u200cদেশ ঢাকা") == "বাংলা\u200cদেশ ঢাকা"


def test_a_file_name_that_is_not_utf8_is_read_and_indexed(tmp_path: Path) -> None:
    """A break-it trial: a text file named ``caf\\xe9.txt`` (Latin-1) crashed the index with
    ``UnicodeEncodeError: surrogates not allowed``."""
    import os

    from kbqa.embedders import NoEmbedder
    from kbqa.index import build_index, load_index
    from kbqa.index.store import source_sha256

    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "ok.txt").write_text("Valid doc about rivers.")
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as fh:
        fh.write(b"Corvin Hall has 9 rooms.")
    docs = list(load_documents(folder))
    assert sorted(d.doc_id for d in docs) == ["caf\\xe9.txt", "ok.txt"]
    assert len(source_sha256(folder)) == 64
    build_index(docs, tmp_path / "idx", NoEmbedder(), progress=False)
    assert {c.doc_id for c in load_index(tmp_path / "idx").chunks} == {"caf\\xe9.txt", "ok.txt"}


def test_a_bad_file_is_named_escaped(tmp_path: Path) -> None:
    """A break-it trial: the binary-file error printed a raw BEL, and the terminal lost an
    escape sequence of the name."""
    folder = tmp_path / "kb"
    folder.mkdir()
    (folder / "evil\x1b[31mRED\x07.txt").write_bytes(b"\x00\x01")
    with pytest.raises(InputError) as err:
        list(load_documents(folder))
    assert "evil\\x1b[31mRED\\x07.txt: a binary file" in str(err.value)
    assert "\x1b" not in str(err.value) and "\x07" not in str(err.value)


PAGE = (
    "<html><head><title>{title}</title></head><body>"
    "<nav><a href='/'>Home</a> | <a href='/about'>About us</a></nav>"
    "<main><p>{body}</p><p>It holds a weekly market on Fridays near the river bank.</p></main>"
    "<footer>Copyright 2024 Sonapur Society. All rights reserved.</footer></body></html>"
)


def test_a_lone_html_page_is_read_without_its_navigation_and_footer(tmp_path: Path) -> None:
    """Issue 36: one page shows no recurring block for the index to remove, so a lone page
    (a file, or a folder's only page) is read for its main content."""
    body = "Sonapur is a village in Noakhali district; its school was founded in 1921."
    page = tmp_path / "kb" / "sonapur.html"
    page.parent.mkdir()
    page.write_text(PAGE.format(title="Sonapur Village", body=body), encoding="utf-8")
    (tmp_path / "kb" / "notes.txt").write_text("plain notes", encoding="utf-8")
    in_folder = [d for d in load_documents(tmp_path / "kb") if d.doc_id == "sonapur.html"]
    for docs in (list(load_documents(page)), in_folder):
        (doc,) = docs
        assert doc.title == "Sonapur Village"
        assert body in doc.text and "weekly market" in doc.text
        assert "About us" not in doc.text and "Copyright" not in doc.text


def test_pages_of_a_folder_keep_their_recurring_blocks_for_the_index(tmp_path: Path) -> None:
    """Two pages or more: their visible text, navigation included, as crawled pages are read;
    the index's boilerplate pass removes what recurs (kbqa.corpus.boilerplate)."""
    for name in ("a", "b"):
        (tmp_path / f"{name}.html").write_text(
            PAGE.format(title=name, body=f"Page {name} is about a village."), encoding="utf-8"
        )
    docs = list(load_documents(tmp_path))
    assert len(docs) == 2 and all("About us" in d.text and "Copyright" in d.text for d in docs)


def test_a_utf16_html_page_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A break-it trial: browsers read it, but the NUL bytes of UTF-16 had it refused as
    binary."""
    page = "<html><head><title>ঢাকা</title></head><body><p>ঢাকা বাংলাদেশের রাজধানী।</p></body></html>"
    (tmp_path / "a.html").write_bytes(page.encode("utf-16"))  # with its byte-order mark
    (tmp_path / "b.html").write_bytes(page.replace("ঢাকা", "খুলনা").encode("utf-16"))
    docs = {d.doc_id: d for d in load_documents(tmp_path)}
    assert docs["a.html"].title == "ঢাকা" and "বাংলাদেশের রাজধানী" in docs["a.html"].text
