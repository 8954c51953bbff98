"""The one text normalisation that index, query, answer checks and evaluation share.

Bangla text carries invisible format characters: ZWNJ (U+200C) and ZWJ (U+200D) select a glyph
form (``র‍্যাব``), and keyboards and copy-paste leave them inside words (``বাংলা‌দেশ``, in 921 of the
3,167 pages of the Bangla KB). With them kept, ``বাংলা‌দেশ`` and ``বাংলাদেশ`` are different words
to BM25 and to the scorer. :func:`normalize_text` applies Unicode NFC and removes every
character of general category Cf (format): ZWNJ, ZWJ, the zero-width space U+200B, the soft
hyphen U+00AD, the byte-order mark U+FEFF, the word joiner U+2060, bidi marks and tag
characters. :func:`fold_digits` maps Bangla digits to ASCII (``১৯৭১`` meets ``1971``).

Stored text (chunks, answers) is not rewritten: the normalisation applies where text is
compared (the BM25 tokenizer, the extractor, answer checks, the scorer).
"""

from __future__ import annotations

import unicodedata

import regex

TEXT_NORMALIZATION = "nfc-no-format-chars"
"""Names the normalisation in an index's manifest (``text_normalization``)."""

_FORMAT_CHARS = regex.compile(r"\p{Cf}+")
_BANGLA_DIGITS = str.maketrans("০১২৩৪৫৬৭৮৯", "0123456789")


def normalize_text(text: str) -> str:
    """NFC, with every format character (Unicode category Cf) removed.

    >>> normalize_text("বাংলা\\u200cদেশ") == "বাংলাদেশ"
    True
    """
    return unicodedata.normalize("NFC", _FORMAT_CHARS.sub("", text))


def strip_format_chars(text: str) -> str:
    """``text`` without format characters (Unicode category Cf), otherwise as given (no NFC): for
    text a model reads, whose tokens should change only where invisible characters were."""
    return str(_FORMAT_CHARS.sub("", text))


def fold_digits(text: str) -> str:
    """Map Bangla digits ০-৯ to ASCII 0-9."""
    return text.translate(_BANGLA_DIGITS)


def is_blank(text: str) -> bool:
    """True when ``text`` holds nothing visible: only whitespace and format characters."""
    return not normalize_text(text).strip()


_CONTROLS = regex.compile(r"[\p{Cc}\u2028\u2029]")


def escape_controls(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\t``, ``\\x1b``,
    ``\\u2028``), for a name shown on one line of a terminal: a file name holding a newline
    must not split the line it is printed on, nor an escape sequence recolour the terminal.
    Letters of every script, and format characters such as ZWNJ, are kept.

    >>> escape_controls("a\\nb\\x1b[31m")
    'a\\\\nb\\\\x1b[31m'
    """
    return str(_CONTROLS.sub(lambda m: repr(m.group())[1:-1], text))
