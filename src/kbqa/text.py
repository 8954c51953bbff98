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

Text a model reads and answers it gives go through :func:`visible_text` instead: the invisible
characters that change no glyph are removed (a zero-width space inside ``খা\u200bলেদা`` made the
reader abstain), while a ZWNJ or ZWJ beside a virama, which selects a conjunct's form
(``র‍্যাব``, ``ক্‌ষ``), is kept. Both fold the legacy khanda-ta, ta + virama + ZWJ (``ত্‍``, the
encoding before Unicode 4.1), into ``ৎ`` (U+09CE), so ``তড়িত্‍কোষ`` and ``তড়িৎকোষ`` are one word.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import regex

TEXT_NORMALIZATION = "nfc-no-format-chars-khanda-ta"
"""Names the normalisation in an index's manifest (``text_normalization``)."""

_FORMAT_CHARS = regex.compile(r"\p{Cf}+")
_KHANDA_TA = regex.compile("\u09a4\u09cd\u200d")  # ta, virama, ZWJ: the legacy khanda-ta
_INVISIBLE = regex.compile(r"(?![\u200c\u200d])\p{Cf}|(?<!\u09cd)[\u200c\u200d](?!\u09cd)")
"""Format characters that change no glyph: every Cf but a ZWNJ or ZWJ beside a virama."""
_BANGLA_DIGITS = str.maketrans("০১২৩৪৫৬৭৮৯", "0123456789")
_SURROGATE = regex.compile("[\ud800-\udfff]")


def normalize_text(text: str) -> str:
    """NFC, with every format character (Unicode category Cf) removed.

    >>> normalize_text("বাংলা\\u200cদেশ") == "বাংলাদেশ"
    True
    """
    return unicodedata.normalize("NFC", _FORMAT_CHARS.sub("", _KHANDA_TA.sub("ৎ", text)))


def visible_text(text: str) -> str:
    """``text`` as it looks: the legacy khanda-ta folded into ``ৎ`` and the format characters
    that change no glyph removed (ZWSP, soft hyphen, word joiner, BOM, bidi marks, and a ZWNJ
    or ZWJ that is not beside a virama), otherwise as given (no NFC): for text a model reads
    and for answers, whose tokens should change only where invisible characters were.

    >>> visible_text("খা\u200bলেদা জি\u00adয়া, র\u200d্যাব, শরত্\u200d") == "খালেদা জিয়া, র\u200d্যাব, শরৎ"
    True
    """
    return str(_INVISIBLE.sub("", _KHANDA_TA.sub("ৎ", text)))


def fold_digits(text: str) -> str:
    """Map Bangla digits ০-৯ to ASCII 0-9."""
    return text.translate(_BANGLA_DIGITS)


_TO_ASCII = _BANGLA_DIGITS
_TO_BN = str.maketrans("0123456789", "০১২৩৪৫৬৭৮৯")
_NUMBER = regex.compile(r"[0-9০-৯](?:[0-9০-৯.,]*[0-9০-৯])?")


def digits_as_in(text: str, others: Sequence[str]) -> str:
    """``text`` with each number written as the first of ``others`` that holds it writes it,
    in ASCII or Bangla digits: a question asking about ``১৯৭৪`` over a best passage that says
    ``1974`` reads ``1974`` (the reader, unlike BM25 and the scorer, does not fold digits). A
    number no passage holds is left as it is.

    >>> digits_as_in("১৯৭৪ সালে কী হয়? ১৯৭১?", ["1974 সালে পাটকল", "১৯৭৪, ১৯৭১ সালে"])
    '1974 সালে কী হয়? ১৯৭১?'
    """

    def held(number: str, passage: str) -> bool:
        return bool(regex.search(rf"(?<![0-9০-৯]){regex.escape(number)}(?![0-9০-৯])", passage))

    def as_written(match: regex.Match[str]) -> str:
        number = str(match.group(0))
        forms = [
            number,
            *{str(number.translate(_TO_ASCII)), str(number.translate(_TO_BN))} - {number},
        ]
        for passage in others:
            for form in forms:
                if held(form, passage):
                    return form
        return number

    return str(_NUMBER.sub(as_written, text))


def is_blank(text: str) -> bool:
    """True when ``text`` holds nothing visible: only whitespace and format characters."""
    return not normalize_text(text).strip()


_CONTROLS = regex.compile(r"[\p{Cc}\p{Cs}\u2028\u2029]")


def escape_controls(text: str) -> str:
    """``text`` with control characters written as escapes (``\\n``, ``\\t``, ``\\x1b``,
    ``\\u2028``), for a name shown on one line of a terminal: a file name holding a newline
    must not split the line it is printed on, nor an escape sequence recolour the terminal. A
    byte of a file name that is not UTF-8 (a lone surrogate, as Python decodes it) is written
    ``\\udce9``. Letters of every script, and format characters such as ZWNJ, are kept.

    >>> escape_controls("a\\nb\\x1b[31m")
    'a\\\\nb\\\\x1b[31m'
    """
    return str(_CONTROLS.sub(lambda m: repr(m.group())[1:-1], text))


def lone_surrogate(text: str) -> str | None:
    """The first half of a surrogate pair in ``text``, or None. Such a string is not text and
    cannot be written as UTF-8: JSON's ``"\\ud800"`` escape and a file name's byte that is not
    UTF-8 (decoded by Python as ``\\udcff``) both make one, and each failed with a traceback
    once kbqa wrote it out (break-it trials)."""
    m = _SURROGATE.search(text)
    return m.group() if m else None
