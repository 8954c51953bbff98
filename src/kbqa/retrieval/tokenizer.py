"""A BM25 tokenizer that is correct for Bangla, and the character n-grams BM25 also indexes.

The common ``\\b\\w\\w+\\b`` pattern (bm25s, LlamaIndex, Haystack defaults) splits Bangla words at
vowel signs and virama, because Python's ``re`` ``\\w`` does not match combining marks
(``বাংলাদেশের রাজধানী কোথায়?`` leaves one token, ``জধ``). Here a token is a maximal run of letters,
combining marks and digits (``[\\p{L}\\p{M}\\p{N}]+`` with the ``regex`` package) after
:func:`kbqa.text.normalize_text` (NFC, zero-width and other format characters removed, so
``বাংলা‌দেশ`` typed with a ZWNJ is ``বাংলাদেশ``), so every Bangla word survives whole.
"""

from __future__ import annotations

import regex

from kbqa.text import fold_digits, normalize_text

_TOKEN = regex.compile(r"[\p{L}\p{M}\p{N}]+")


def tokenize(text: str) -> list[str]:
    """Split text into lower-cased word tokens.

    Args:
        text: Any text, any script.

    Returns:
        Tokens: lower-cased runs of ``[\\p{L}\\p{M}\\p{N}]`` after
        :func:`~kbqa.text.normalize_text`, Bangla digits mapped to ASCII. Punctuation
        (including the danda ``।``), spaces and format characters (ZWNJ, ZWJ...) are dropped.
    """
    text = fold_digits(normalize_text(text)).lower()
    tokens: list[str] = _TOKEN.findall(text)
    return tokens


NGRAM_N = 4
"""Length of the character n-grams added to every word (4 measured best of 3, 4 and 5)."""
TERMS_WORDS = "words"
TERMS_WORDS_NGRAMS = f"words+char{NGRAM_N}grams#"
"""How an index's BM25 terms were made (its manifest's ``bm25_terms``)."""


NGRAM_PREFIX = "#"
"""Starts every n-gram term, so that an n-gram never equals a word: the word ``java`` and the
inner 4-gram of ``javascript`` are different BM25 terms (words never hold ``#``)."""


def char_ngrams(token: str, n: int = NGRAM_N) -> list[str]:
    """Character n-grams of a word marked with ``<`` and ``>`` at its ends, as fastText does
    (Bojanowski et al., 2017), each prefixed with :data:`NGRAM_PREFIX`: ``"নদীর"`` gives
    ``#<নদী``, ``#নদীর``, ``#দীর>``.

    The word's inflected forms share most of them (``নদী``, ``নদীর``, ``নদীতে``), which is the
    match Bangla's case suffixes otherwise break. A word of ``n - 2`` or fewer characters
    gives itself, marked.
    """
    marked = f"<{token}>"
    if len(marked) <= n:
        return [NGRAM_PREFIX + marked]
    return [NGRAM_PREFIX + marked[i : i + n] for i in range(len(marked) - n + 1)]


def with_ngrams(tokens: list[str], n: int = NGRAM_N) -> list[str]:
    """``tokens`` followed by every token's :func:`char_ngrams`: the BM25 terms of a text."""
    return tokens + [g for t in tokens for g in char_ngrams(t, n)]


def url_tokens(url: str) -> list[str]:
    """Host and path words of a URL, for BM25 enrichment (type-aware RAG seed)."""
    if not url:
        return []
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    return tokenize(f"{parts.hostname or ''} {unquote(parts.path)}")
