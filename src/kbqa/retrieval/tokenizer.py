"""A BM25 tokenizer that is correct for Bangla.

The common ``\\b\\w\\w+\\b`` pattern (bm25s, LlamaIndex, Haystack defaults) splits Bangla words at
vowel signs and virama, because Python's ``re`` ``\\w`` does not match combining marks
(``বাংলাদেশের রাজধানী কোথায়?`` leaves one token, ``জধ``). Here a token is a maximal run of letters,
combining marks and digits (``[\\p{L}\\p{M}\\p{N}]+`` with the ``regex`` package) after NFC
normalisation, so every Bangla word survives whole.
"""

from __future__ import annotations

import unicodedata

import regex

_TOKEN = regex.compile(r"[\p{L}\p{M}\p{N}]+")
_BANGLA_DIGITS = str.maketrans("০১২৩৪৫৬৭৮৯", "0123456789")


def normalize_digits(text: str) -> str:
    """Map Bangla digits ০-৯ to ASCII 0-9 so ``১৯৭১`` and ``1971`` match."""
    return text.translate(_BANGLA_DIGITS)


def tokenize(text: str) -> list[str]:
    """Split text into lower-cased word tokens.

    Args:
        text: Any text, any script.

    Returns:
        Tokens: NFC-normalised, lower-cased runs of ``[\\p{L}\\p{M}\\p{N}]``, Bangla digits mapped
        to ASCII. Punctuation (including the danda ``।``) and spaces are dropped.
    """
    text = normalize_digits(unicodedata.normalize("NFC", text)).lower()
    tokens: list[str] = _TOKEN.findall(text)
    return tokens


def url_tokens(url: str) -> list[str]:
    """Host and path words of a URL, for BM25 enrichment (type-aware RAG seed)."""
    if not url:
        return []
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return tokenize(f"{parts.hostname or ''} {unquote(parts.path)}")
