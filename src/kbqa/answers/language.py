"""Question language (``bn``/``en``) and type, by rules over Bangla and English question words.

Types follow the type-aware RAG seed: person, date, number, location, email, list, yes/no,
other.
"""

from __future__ import annotations

import regex

from kbqa.text import normalize_text

_BENGALI = regex.compile(r"[\u0980-\u09FF]")
_LETTER = regex.compile(r"\p{L}")

_B = r"(?<![\p{L}\p{M}])"
_E = r"(?![\p{L}\p{M}])"
"""Bangla word edges: ``\\b`` does not work for Bangla (vowel signs are not ``\\w``), and a
question word must not match inside another word (``কখন`` inside ``কখনো``, never)."""

# Checked in order; the first rule that matches wins.
_RULES: list[tuple[str, regex.Pattern[str]]] = [
    ("email", regex.compile(r"(ই-?মেইল|e-?mail)", regex.I)),
    # an explicit yes-or-no: "... - হ্যাঁ কি না?", "... কিনা?", a final "... নাকি?" (an
    # either-or inside the sentence, "ঢাকা নাকি চট্টগ্রাম?", asks which, not yes/no)
    ("yes/no", regex.compile(rf"{_B}(কিনা|কি\s+না|কী\s+না){_E}|{_B}নাকি\s*[?？]?\s*$")),
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

_KI = rf"{_B}(কি|কী){_E}"
_KI_ASKS = regex.compile(
    rf"{_KI}\s*(ধরনের|ধরণের|নামে|নাম|কারণে|কারনে|হিসেবে|হিসাবে|রকম|রকমের|জন্য|উদ্দেশ্যে|বিষয়ে|বিষয়ে|"
    rf"কাজ|ছিল|ছিলো){_E}"
    rf"|{_KI}\s*(হয়|হয়|হল|হবে|হচ্ছে|কর|বল|বোঝ|বুঝ)[\p{{L}}\p{{M}}]*"
)
"""``কি``/``কী`` asking *what*: before a noun it asks for (``কি নামে``, ``কী কারণে``) or right before
a form of হওয়া, করা, বলা, বোঝা (``কি হয়েছিল``, ``কি করেছিলেন``, ``কী বোঝায়``)."""
_FINAL_KI = regex.compile(rf"(\S+)\s+{_KI}\s*[?？]?\s*$")
_VERB_END = regex.compile(
    r"(েছে|েছেন|েছিল|েছিলো|েছিলেন|ছে|ছেন|ছিল|ছিলো|ছিলেন|েন|বে|বেন|তো|তেন|আছে|নেই|করে|পারে|থাকে|"
    r"রাখে|বলে|চলে|হয়|হয়|যায়|যায়|দেয়|দেয়|নেয়|নেয়|পায়|পায়|যান|পান|খান|চান|হন|দেন|নেন|হল|হলো|গেল|"
    r"গেলো|দিল|দিলো|নিল|নিলো|পেল|পেলো|করল|করলো)$"
)
"""Endings of finite Bangla verbs (``রয়েছে``, ``করে``, ``পারেন``, ``হয়``, ``ছিল``); a noun before a
final ``কি`` (``রাজধানী কি?``) asks *what*."""
QUESTION_WORDS_BN = frozenset(
    normalize_text(word)
    for word in (
        "কে", "কী", "কি", "কোন", "কোনটি", "কোনগুলো", "কোনো", "কোথায়", "কোথা", "কোথাকার", "কবে",
        "কখন", "কত", "কতটা", "কতো", "কতজন", "কতটি", "কততম", "কেন", "কিভাবে", "কীভাবে", "কার",
        "কাকে", "কাদের", "কারা", "কয়", "কয়টি", "কিসের", "কীসের", "কিসে", "কীসে", "কেমন", "কিরূপ",
        "কীরূপ",
    )
)  # fmt: skip
"""Bangla question words, as whole tokens after :func:`~kbqa.text.normalize_text` (the
extractor finds the question word's place with them)."""
_WH_BN = regex.compile(rf"{_B}({'|'.join(sorted(QUESTION_WORDS_BN, key=len, reverse=True))})")
"""A word that starts with a Bangla question word (a prefix match: ``কোন`` covers ``কোনটি``,
``কত`` covers ``কতজন``); matched against normalised text."""


def _bangla_yes_no(q: str) -> bool:
    """A Bangla yes/no question, decided by its structure (BanglaRQA's confirmation questions):

    - ``কি``/``কী`` as the interrogative particle after a finite verb at the end (``... রয়েছে
      কি?``); after a noun (``রাজধানী কি?``, ``রাজধানী কী?``) it asks *what*, whichever spelling;
    - ``কি`` inside the sentence (``ঢাকা কি বাংলাদেশের রাজধানী?``), unless it asks *what*
      (``কি নামে``, ``কি কারণে``); ``কী`` inside the sentence is the standard spelling of *what*;
    - a statement asked as a question: no question word at all and a final ``?``
      (``পাট বাংলাদেশের একটি অর্থকরী ফসল?``).
    """
    if final := _FINAL_KI.search(q):
        return bool(_VERB_END.search(final.group(1)))
    if regex.search(rf"{_B}কি{_E}", q):
        return not _KI_ASKS.search(q)
    if regex.search(rf"{_B}কী{_E}", q):
        return False  # the standard spelling of *what*
    return q.rstrip().endswith(("?", "？")) and not _WH_BN.search(q)


def detect_language(text: str) -> str:
    """``bn`` when at least 30% of the letters are Bengali script, else ``en``."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    return "bn" if len(_BENGALI.findall(text)) / len(letters) >= 0.3 else "en"


def question_type(question: str) -> str:
    """Rule-based question type; ``other`` when no rule matches."""
    q = normalize_text(question).strip()
    for name, pattern in _RULES:
        if pattern.search(q):
            return name
    if detect_language(q) == "bn" and _bangla_yes_no(q):
        return "yes/no"
    return "other"
