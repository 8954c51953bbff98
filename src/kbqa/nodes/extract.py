"""extract: answer without an LLM, by patterns and sentence overlap (type-aware RAG seed).

The seed's deterministic extractor keeps the system standing when no LLM is available (its
no-LLM F1 was 0.284 against 0.758 with the LLM). Here:

1. the retrieved chunks are split into sentences (after ``।`` ``.`` ``?`` ``!`` or a newline);
2. each sentence is scored by the question words it shares (digits folded, so ``১৯৭১`` meets
   ``1971``), ties broken by retrieval rank;
3. typed questions (email, phone, URL, date/year, number with unit, course code, person) take the
   first pattern match in the best-scoring sentences that have one;
4. other questions take the longest run of words of the best sentence that the question does not
   already contain (at most :data:`MAX_SPAN_WORDS`).

Patterns use the ``regex`` package with ``\\p{L}\\p{M}``: Python's ``\\w`` does not match Bangla
vowel signs, so ``জন্মগ্রহণ`` would split inside the word.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import context_of, visited
from kbqa.nodes.check_abstention import chunk_sources
from kbqa.resources import retriever_for
from kbqa.retrieval.tokenizer import tokenize
from kbqa.state import State
from kbqa.text import normalize_text

MAX_SPAN_WORDS = 6
"""Longest answer (in words) taken from a sentence for untyped questions."""
SENTENCES_SEARCHED = 20
"""Best-scoring sentences searched for a typed pattern (a phone number often sits in a sentence
that shares no word with the question, next to one that does)."""

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
    "year": regex.compile(
        rf"(?<!\p{{N}}){_D}{{4}}(?!\p{{N}})(?:\s*(?:সালে|সাল|খ্রিস্টাব্দে|খ্রিস্টাব্দ|খ্রিষ্টাব্দে|খ্রিষ্টাব্দ))?"
    ),
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

_KEYWORD_TYPES: list[tuple[str, regex.Pattern[str]]] = [
    ("phone", regex.compile(r"(ফোন|টেলিফোন|মোবাইল|phone|telephone|fax)", regex.I)),
    ("url", regex.compile(r"(ওয়েবসাইট|ওয়েবসাইট|website|web\s*page|url|link)", regex.I)),
    ("course", regex.compile(r"\b(course|class)\s*(number|code|id)?\b", regex.I)),
    (
        "year",
        regex.compile(r"(কোন\s*সালে|কত\s*সালে|কোন\s*বছর|\bwhat\s+year\b|\bwhich\s+year\b)", regex.I),
    ),
]
_TYPE_PATTERNS = {
    "email": ["email"],
    "date": ["date", "year"],
    "year": ["year", "date"],
    "number": ["number"],
    "person": ["person"],
    "phone": ["phone"],
    "url": ["url"],
    "course": ["course"],
}
_SENTENCE_END = regex.compile(
    r"(?<!\b(?:Dr|Prof|Mr|Mrs|Ms|St|Jr|Sr|vs|etc|Inc|No|e\.g|i\.e|[A-Z]|ড|মো)\.)(?<=[।.?!])\s+|\n+"
)
"""Sentence boundary: after ``।`` ``.`` ``?`` ``!`` unless the dot ends a title or initial."""
YES = {"bn": "হ্যাঁ", "en": "Yes"}
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


@dataclass(frozen=True, slots=True)
class Extraction:
    """An extracted span: the answer, the pattern that found it (or ``overlap``), the chunk it
    came from, the overlap score of its sentence and the sentence itself."""

    answer: str
    method: str
    chunk_id: int
    score: float
    sentence: str = ""


def answer_kind(question: str, question_type: str) -> str:
    """The pattern family a question asks for: a question type from classify, refined by
    keywords (phone, URL, course code, year)."""
    for kind, pattern in _KEYWORD_TYPES:
        if pattern.search(question):
            return kind
    return question_type


def sentences(text: str) -> list[str]:
    """Sentences of a passage (split after ``।`` ``.`` ``?`` ``!`` and at newlines)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _content_words(text: str) -> set[str]:
    return {t for t in tokenize(text) if t not in STOPWORDS}


def extract_answer(
    question: str,
    question_type: str,
    passages: list[tuple[int, str]],
    language: str = "bn",
) -> Extraction | None:
    """Pick an answer span from ``passages`` without an LLM.

    Args:
        question: The question.
        question_type: From :func:`kbqa.nodes.classify.question_type`.
        passages: ``(chunk_id, text)`` in retrieval order (best first).
        language: ``bn`` or ``en`` (the yes/no answer's language).

    Returns:
        The span, or None when no sentence shares a content word with the question.
    """
    question = normalize_text(question)
    q_words = _content_words(question)
    scored: list[tuple[float, int, str]] = []  # (score, chunk_id, sentence)
    for rank, (chunk_id, text) in enumerate(passages):
        for sent in sentences(normalize_text(text)):
            overlap = len(q_words & set(tokenize(sent)))
            scored.append((overlap - 0.01 * rank, chunk_id, sent))
    if not scored or scored_max(scored) < 1 - 0.01 * len(passages):
        return None  # no sentence shares a content word with the question
    scored.sort(key=lambda s: -s[0])
    kind = answer_kind(question, question_type)
    if kind == "yes/no":
        best = scored[0]
        return Extraction(YES.get(language, YES["en"]), "yes/no", best[1], best[0], best[2])
    names = _TYPE_PATTERNS.get(kind, [])
    for score, chunk_id, sent in scored[:SENTENCES_SEARCHED]:  # best sentence first, then
        for name in names:  # the pattern families in order of preference
            for match in PATTERNS[name].finditer(sent):
                span = " ".join(match.group(0).split()).strip(" ,")
                if span and not (_content_words(span) and _content_words(span) <= q_words):
                    return Extraction(span, name, chunk_id, score, sent)
    score, chunk_id, sent = scored[0]
    if not sent:
        return None
    return Extraction(_novel_span(sent, question), "overlap", chunk_id, score, sent)


def scored_max(scored: list[tuple[float, int, str]]) -> float:
    return max(s[0] for s in scored)


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


def _trim_edges(words: list[str]) -> list[str]:
    def bare(word: str) -> str:
        return word.strip(",;:।.!?\"'()").lower()

    while words and bare(words[0]) in EDGE_WORDS:
        words = words[1:]
    while words and bare(words[-1]) in EDGE_WORDS:
        words = words[:-1]
    return words


def _novel_span(sentence: str, question: str) -> str:
    """The longest run of the sentence's words that the question does not contain, without
    function words at its edges."""
    q_tokens = set(tokenize(question))
    words = sentence.rstrip("।.?!").split()
    best: list[str] = []
    run: list[str] = []
    for word in words:
        toks = tokenize(word)
        if toks and not set(toks) & q_tokens:
            run.append(word)
            if len(run) > len(best):
                best = list(run)
        else:
            run = []
    span = _trim_edges(best)[:MAX_SPAN_WORDS] or (best or words)[:MAX_SPAN_WORDS]
    return " ".join(span).strip(" ,;:")


def extract(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer from ``retrieved`` with :func:`extract_answer`; abstain when nothing matches."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    chunks = retriever_for(ctx).index.chunks
    records = state.get("retrieved", [])
    passages = [(r["chunk_id"], chunks[r["chunk_id"]].text) for r in records]
    found = extract_answer(
        state["question"],
        state.get("question_type", "other"),
        passages,
        state.get("language", "bn"),
    )
    answer = found.answer if found else ""
    by_id = {r["chunk_id"]: r for r in records}
    sources = chunk_sources(chunks, [by_id[found.chunk_id]], [found.chunk_id]) if found else []
    return {
        "sources": sources,
        "raw_answer": answer,
        "answer": answer or ctx.abstention_phrase,
        "abstained": not answer,
        "answered_by": "extract",
        "context_chunk_ids": [found.chunk_id] if found else [],
        "stage_answers": [
            {"stage": "extract", "answer": answer or ctx.abstention_phrase, "abstained": not answer}
        ],
        **visited("extract", started),
    }
