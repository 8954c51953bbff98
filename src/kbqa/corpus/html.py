"""HTML pages to text: decoding as browsers do, then the page's visible text or its main
content.

- ``full`` (default): every visible text block of the page, one per line, navigation and
  footers included, extracted by ``html-text`` (Zyte). The index strategies then remove the
  blocks that recur across the site's pages (:mod:`kbqa.corpus.boilerplate`), which needs
  them present; the type-aware RAG seed also found light cleaning better for BM25.
- ``main``: the main content only, by ``trafilatura`` (favouring recall); it drops navigation
  and footers by markup heuristics, page by page.
"""

from __future__ import annotations

EXTRACT_MODES = ("full", "main")


def decode_html(body: bytes, charset: str | None = None) -> str:
    """Text of an HTML body, its encoding found as browsers do (HTML5 sniffing through
    ``w3lib``, Scrapy's library): a known charset from the Content-Type header, a byte-order
    mark, a known ``<meta charset>``, else UTF-8 when the bytes are valid UTF-8, else
    ``charset_normalizer``'s guess. Unknown charset names are ignored, not trusted; bytes that
    still do not decode become U+FFFD."""
    from w3lib.encoding import html_to_unicode

    header = f"text/html; charset={charset}" if charset else None
    _, text = html_to_unicode(header, body, default_encoding="utf-8", auto_detect_fun=_guess)
    return text


def _guess(body: bytes) -> str | None:
    try:
        body.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    matches = from_bytes(body)
    best = matches.best()
    if best is None:
        return None
    tied = {m.encoding for m in matches if (m.chaos, m.coherence) == (best.chaos, best.coherence)}
    # HTML5's fallback for undeclared pages is windows-1252; prefer it when the guess is a tie
    return "cp1252" if "cp1252" in tied else best.encoding


def html_to_text(html: str, extract: str = "full") -> tuple[str, str]:
    """Title and text of an HTML page.

    Args:
        html: The decoded page.
        extract: ``full`` (all visible text, one block per line) or ``main`` (trafilatura's
            main content).

    Raises:
        ValueError: Unknown ``extract`` mode.
    """
    if extract == "main":
        import trafilatura

        text = trafilatura.extract(html, favor_recall=True, include_comments=False) or ""
        meta = trafilatura.extract_metadata(html)
        return (meta.title if meta is not None else None) or "", text
    if extract != "full":
        raise ValueError(f"unknown extract mode {extract!r}; use one of {', '.join(EXTRACT_MODES)}")
    import html_text
    from lxml.etree import ParserError

    try:
        tree = html_text.parse_html(html)
    except (ParserError, ValueError):  # empty or unparsable document
        return "", ""
    title = " ".join((tree.findtext(".//title") or "").split())
    for element in tree.findall(".//title"):  # stored as the title, not as text: a unique
        element.drop_tree()  # first line would stop coverage cleaning at the top of the page
    text = html_text.extract_text(tree, guess_layout=True)
    lines = (" ".join(line.split()) for line in text.splitlines())
    return title, "\n".join(line for line in lines if line)
