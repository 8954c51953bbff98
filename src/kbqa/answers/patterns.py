"""The extractor's tables: typed answer patterns (email, phone, URL, date and year with Bangla and
ASCII digits and Bangla month names, numbers with units, course codes, titled person names), the
question keywords that pick a pattern family, and the Bangla and English stop words.

Patterns use the ``regex`` package with ``\\p{L}\\p{M}``: Python's ``\\w`` does not match Bangla
vowel signs, so ``জন্মগ্রহণ`` would split inside the word.
"""

from __future__ import annotations

import regex

_D = "[0-9০-৯]"

_END = r"(?![\p{L}\p{M}])"
"""A word ends here: ``মে`` (May) must not match the start of ``মেগাওয়াট``."""

BN_MONTHS = (
    "জানুয়ারি|জানুয়ারী|ফেব্রুয়ারি|ফেব্রুয়ারী|মার্চ|এপ্রিল|মে|জুন|জুলাই|আগস্ট|আগষ্ট|সেপ্টেম্বর|"
    "অক্টোবর|নভেম্বর|ডিসেম্বর|বৈশাখ|জ্যৈষ্ঠ|আষাঢ়|শ্রাবণ|ভাদ্র|আশ্বিন|কার্তিক|অগ্রহায়ণ|পৌষ|মাঘ|ফাল্গুন|চৈত্র"
)

EN_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.?|Feb\.?|Mar\.?|Apr\.?|Jun\.?|Jul\.?|Aug\.?|Sep\.?|Sept\.?|Oct\.?|Nov\.?|Dec\.?"
)

UNITS = (
    "কিলোমিটার|কিমি|মিটার|সেন্টিমিটার|মাইল|বর্গকিলোমিটার|বর্গ কিলোমিটার|কেজি|কিলোগ্রাম|গ্রাম|টন|লিটার|"
    "টাকা|ডলার|শতাংশ|জন|টি|টা|বছর|দিন|মাস|ঘণ্টা|মিনিট|ডিগ্রি|"
    "km|kilometers?|kilometres?|meters?|metres?|miles?|kg|kilograms?|tons?|litres?|liters?|"
    "dollars?|percent|people|persons?|years?|days?|months?|hours?|minutes?|degrees?|units?|%|\\$"
)

PATTERNS: dict[str, regex.Pattern[str]] = {
    "email": regex.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"),
    "url": regex.compile(r"(?:https?://|www\.)[^\s<>\"'()।]+[^\s<>\"'().,;:!?।]"),
    "phone": regex.compile(rf"(?<![\p{{N}}\w])\+?{_D}[{_D[1:-1]}\s\-().]{{6,}}{_D}(?![\p{{N}}\w])"),
    "date": regex.compile(
        rf"{_D}{{4}}\s*(?:সালের|সালে|খ্রিস্টাব্দের)\s*{_D}{{1,2}}\s*(?:{BN_MONTHS}){_END}"
        rf"|{_D}{{1,2}}\s*(?:{BN_MONTHS}){_END}[,\s]*(?:{_D}{{4}})?"
        rf"|(?:{BN_MONTHS}){_END}\s*{_D}{{1,2}}[,\s]*{_D}{{4}}"
        rf"|(?:{EN_MONTHS})\s+{_D}{{1,2}}(?:st|nd|rd|th)?(?:,\s*{_D}{{4}})?"
        rf"|{_D}{{1,2}}(?:st|nd|rd|th)?\s+(?:{EN_MONTHS})(?:,?\s*{_D}{{4}})?"
        rf"|{_D}{{4}}-{_D}{{2}}-{_D}{{2}}"
        rf"|{_D}{{1,2}}/{_D}{{1,2}}/{_D}{{2,4}}",
        regex.I,
    ),
    "year": regex.compile(rf"(?<!\p{{N}}){_D}{{4}}(?!\p{{N}})"),
    "number": regex.compile(
        rf"(?<![\p{{N}}\p{{L}}]){_D}[{_D[1:-1]},.]*(?:\s*(?:{UNITS})(?![\p{{L}}\p{{M}}]))?", regex.I
    ),
    "course": regex.compile(r"\b(?:[A-Z]{2,5}\s?-?\d{2,4}[A-Z]?|\d{2}-\d{3})\b"),
    "person": regex.compile(
        r"\b(?:Dr|Prof|Professor|Mr|Mrs|Ms|Sir)\.?\s+[A-Z][\p{L}'\-]+(?:\s+[A-Z]\.)?(?:\s+[A-Z][\p{L}'\-]+){0,2}"
        r"|(?:ড\.|ডঃ|ডক্টর|অধ্যাপক|প্রফেসর|জনাব|বেগম|শেখ|মোঃ|মো\.|মোহাম্মদ|মুহাম্মদ|শ্রী|শ্রীমতী|স্যার)\s*"
        r"[\p{Bengali}\p{M}]+(?:\s+[\p{Bengali}\p{M}]+){0,2}"
    ),
}
"""Span patterns by answer type."""

KEYWORD_TYPES: list[tuple[str, regex.Pattern[str]]] = [
    ("phone", regex.compile(r"(ফোন|টেলিফোন|মোবাইল|phone|telephone|fax)", regex.I)),
    ("url", regex.compile(r"(ওয়েবসাইট|ওয়েবসাইট|website|web\s*page|url|link)", regex.I)),
    ("course", regex.compile(r"\b(course|class)\s*(number|code|id)?\b", regex.I)),
    (
        "year",
        regex.compile(r"(কোন\s*সালে|কত\s*সালে|কোন\s*বছর|\bwhat\s+year\b|\bwhich\s+year\b)", regex.I),
    ),
]

TYPE_PATTERNS = {
    "email": ["email"],
    "date": ["date", "year"],
    "year": ["year", "date"],
    "number": ["number"],
    "person": ["person"],
    "phone": ["phone"],
    "url": ["url"],
    "course": ["course"],
}

STOPWORDS = frozenset(
    [
        "কি",
        "কী",
        "কে",
        "কোন",
        "কোথায়",
        "কবে",
        "কত",
        "কয়টি",
        "কেন",
        "কীভাবে",
        "কিভাবে",
        "এর",
        "এই",
        "ও",
        "এবং",
        "একটি",
        "হয়",
        "হয়েছিল",
        "ছিল",
        "ছিলেন",
        "করেন",
        "করে",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "is",
        "are",
        "was",
        "were",
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "by",
        "with",
        "from",
        "and",
        "or",
        "does",
        "did",
        "do",
        "name",
    ]
)

EDGE_WORDS = frozenset(
    [
        "হলো",
        "হল",
        "হলেন",
        "হচ্ছে",
        "হচ্ছেন",
        "ছিল",
        "ছিলো",
        "ছিলেন",
        "এবং",
        "ও",
        "বা",
        "রয়েছে",
        "রয়েছে",
        "আছে",
        "যা",
        "যে",
        "যিনি",
        "তার",
        "তাঁর",
        "করে",
        "করেন",
        "করেছিলেন",
        "করেছেন",
        "একটি",
        "একজন",
        "এই",
        "সেই",
        "থেকে",
        "জন্য",
        "দ্বারা",
        "কিন্তু",
        "is",
        "are",
        "was",
        "were",
        "the",
        "a",
        "an",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "which",
        "who",
        "that",
    ]
)
"""Function words trimmed from the edges of an extracted span (``হলো গ্রাম আদালত`` -> ``গ্রাম
আদালত``)."""
