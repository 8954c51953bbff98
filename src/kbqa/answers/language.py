"""Question language (``bn``/``en``) and type, by rules over Bangla and English question words
and, for Bangla yes/no, a small classifier (:mod:`kbqa.answers.yes_no`).

Types follow the type-aware RAG seed: person, date, number, location, email, list, yes/no,
other.
"""

from __future__ import annotations

import regex

from kbqa.answers.yes_no import yes_no_classifier
from kbqa.text import normalize_text

_BENGALI = regex.compile(r"[\u0980-\u09FF]")
_LETTER = regex.compile(r"\p{L}")

_B = r"(?<![\p{L}\p{M}])"
_E = r"(?![\p{L}\p{M}])"
"""Bangla word edges: ``\\b`` does not work for Bangla (vowel signs are not ``\\w``), and a
question word must not match inside another word (``কখন`` inside ``কখনো``, never)."""

# Checked in order; the first rule that matches wins. A Bangla yes/no is decided between list
# and date by a classifier (see question_type).
_RULES: list[tuple[str, regex.Pattern[str]]] = [
    ("email", regex.compile(r"(ই-?মেইল|e-?mail)", regex.I)),
    ("list", regex.compile(rf"{_B}(কি\s+কি|কী\s+কী|কোন\s+কোন|কে\s+কে|কারা\s+কারা){_E}")),
    (
        "date",
        regex.compile(
            rf"{_B}(কবে|কখন|কত\s*সালে|কোন\s*সালে|কত\s*তারিখে|কোন\s*তারিখে|কোন\s*বছর|কত\s*খ্রিস্টাব্দে){_E}|"
            r"\bwhen\b|\bwhat\s+(year|date|day|month|century)\b|\bwhich\s+(year|date|day|month|century)\b",
            regex.I,
        ),
    ),
    (
        "person",
        regex.compile(
            r"((^|\s)(কে|কারা|কাকে|কার|কাদের|কিনি)(\s|\?|$)|\bwho\b|\bwhom\b|\bwhose\b)", regex.I
        ),
    ),
    (
        "location",
        regex.compile(
            r"(কোথায়|কোথা\s*থেকে|কোন\s*(দেশে|শহরে|জেলায়|স্থানে|জায়গায়|নদীর)|\bwhere\b|"
            r"\bwhich\s+(country|city|state|place)\b)",
            regex.I,
        ),
    ),
    (
        "number",
        regex.compile(
            r"(কত|কয়টি|কয়টি|কতটি|কতজন|কয়জন|কয়জন|\bhow\s+(many|much|long|old|far)\b)", regex.I
        ),
    ),
    (
        "yes/no",
        regex.compile(
            r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", regex.I
        ),
    ),
]


def detect_language(text: str) -> str:
    """``bn`` when at least 30% of the letters are Bengali script, else ``en``."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    return "bn" if len(_BENGALI.findall(text)) / len(letters) >= 0.3 else "en"


def question_type(question: str) -> str:
    """The question's type: ``email`` and ``list`` by rule; for a Bangla question then
    ``yes/no`` by the shipped classifier (:func:`kbqa.answers.yes_no.yes_no_classifier`, which
    reads the whole question: ``কি`` asks *what* as often as it asks yes or no); then the word
    rules (date, person, location, number, an English yes/no); ``other`` when none matches.
    Deterministic.
    """
    q = normalize_text(question).strip()
    for name, pattern in _RULES[:2]:  # email, list (a doubled কি কি asks for a list)
        if pattern.search(q):
            return name
    if detect_language(q) == "bn" and yes_no_classifier().is_yes_no(q):
        return "yes/no"
    for name, pattern in _RULES[2:]:
        if pattern.search(q):
            return name
    return "other"
