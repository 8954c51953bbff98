"""The web search query: a question's key entities, by rules (quoted phrases, runs of capitalised
English words, numbers, and the Bangla/English content words left after question words and
particles are dropped)."""

from __future__ import annotations

import regex

from kbqa.answers.extract import STOPWORDS
from kbqa.text import normalize_text

MAX_QUERY_WORDS = 8

_QUOTED = regex.compile(r"[\"“«‘']([^\"”»’']{2,80})[\"”»’']")
_CAPITALISED = regex.compile(
    r"\b[A-Z][\p{L}\p{M}'’\-]*(?:\s+(?:(?:of|de|the|and|in|for|on)\s+)*[A-Z][\p{L}\p{M}'’\-]*)*"
)
"""A run of capitalised words, with connectors inside it (``Nobel Prize in Physics``)."""
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:[.\-'][\p{L}\p{M}\p{N}]+)*")
BN_PARTICLES = (  # not a bare র or ে: শহর, পুরস্কার end in them
    "টির",
    "টিকে",
    "টি",
    "টা",
    "গুলো",
    "গুলি",
    "দের",
    "কে",
    "রা",
    "এর",
    "য়ের",
    "ের",
)
"""Bangla case endings and classifiers stripped from a query word (longest first)."""
EXTRA_STOPWORDS = frozenset(
    [
        "কোনটি",
        "কারা",
        "কাকে",
        "কার",
        "কাদের",
        "কয়জন",
        "কতজন",
        "নাম",
        "কী",
        "কি",
        "হলো",
        "হল",
        "হয়েছে",
        "হয়েছিলেন",
        "করা",
        "করেছিলেন",
        "তিনি",
        "তার",
        "তাঁর",
        "তাদের",
        "সেই",
        "এটি",
        "এটা",
        "যে",
        "সে",
        "আছে",
        "ছিলো",
        "there",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
        "these",
        "those",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
    ]
)


def key_entities(question: str) -> list[str]:
    """Key noun phrases of a question, for a search query, most specific first.

    Quoted phrases, then runs of capitalised English words (``Nobel Prize in Physics``), then
    the remaining content words (Bangla words lose a trailing case ending such as ``-এর``).
    Question words, particles and duplicates are dropped; zero-width characters inside words
    are removed first (:func:`kbqa.text.normalize_text`).
    """
    question = normalize_text(question)
    found: list[str] = []
    seen: set[str] = set()

    def add(phrase: str) -> None:
        phrase = " ".join(phrase.split()).strip(" ?.,!।")
        key = phrase.lower()
        if phrase and key not in seen and key not in STOPWORDS | EXTRA_STOPWORDS:
            seen.add(key)
            seen.update(key.split())
            found.append(phrase)

    for m in _QUOTED.finditer(question):
        add(m.group(1))
    for m in _CAPITALISED.finditer(question):
        words = m.group(0).split()
        while words and words[0].lower() in STOPWORDS | EXTRA_STOPWORDS:
            words = words[1:]
        if words:
            add(" ".join(words))
    for m in _WORD.finditer(question):
        word = m.group(0)
        if word.lower() in seen or word.lower() in STOPWORDS | EXTRA_STOPWORDS:
            continue
        if regex.search(r"\p{Bengali}", word):
            for ending in BN_PARTICLES:
                if word.endswith(ending) and len(word) - len(ending) >= 2:
                    word = word[: -len(ending)]
                    break
        add(word)
    return found


def web_query(question: str) -> str:
    """The search query: :func:`key_entities` joined, at most :data:`MAX_QUERY_WORDS` words."""
    words: list[str] = []
    for phrase in key_entities(question):
        words.extend(phrase.split())
    return " ".join(words[:MAX_QUERY_WORDS]) or normalize_text(question).strip()
