"""extract: answer without an LLM, by patterns and sentence overlap (type-aware RAG seed).

The seed's deterministic extractor keeps the system standing when no LLM is available (its
no-LLM F1 was 0.284 against 0.758 with the LLM). Here:

1. the retrieved chunks are split into sentences (after ``।`` ``.`` ``?`` ``!`` or a newline);
2. each sentence is scored by the question words it shares (digits folded, so ``১৯৭১`` meets
   ``1971``), ties broken by retrieval rank;
3. typed questions (email, phone, URL, date/year, number with unit, course code, person) take the
   first pattern match in the best-scoring sentences that have one;
4. other Bangla questions take the words that stand where the question word stands
   (:func:`aligned_span`: Bangla keeps its question word in place, so ``মাঙ্গা কোন ভাষায়
   নির্মিত?`` is answered by the word before ``ভাষায় নির্মিত`` in ``মাঙ্গা জাপানি ভাষায়
   নির্মিত``);
5. failing that, the longest run of words of the best sentence that the question does not
   already contain (at most :data:`MAX_SPAN_WORDS`).

Patterns use the ``regex`` package with ``\\p{L}\\p{M}``: Python's ``\\w`` does not match Bangla
vowel signs, so ``জন্মগ্রহণ`` would split inside the word.
"""

from __future__ import annotations

import itertools
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

MAX_SPAN_WORDS = 15
"""Longest answer (in words) taken from a sentence for untyped questions, when no aligned span is
found. BanglaRQA's gold answers there average 8 words; on its answerable validation questions
outside the seed-1 sample, answerable F1 rose with the cap from 6 to 15 words (0.535 -> 0.560)
and by 0.004 more up to 30; 15 is the smallest cap within 0.005 of the best
(``docs/finetune.md``, "The extractor")."""
SENTENCES_SEARCHED = 20
"""Best-scoring sentences searched for a contact pattern (email, phone, URL, course code): a phone
number often sits in a sentence that shares no word with the question, next to one that does."""
CONTACT_KINDS = frozenset({"email", "phone", "url", "course"})
"""Answer kinds always searched beyond the best sentence (:data:`SENTENCES_SEARCHED`). In Bangla
the other typed patterns (date, year, number, person) are searched in the best sentence only:
searching the next 19 too took the first number or name of a sentence that did not hold the
answer (BanglaRQA validation, answerable, outside the seed-1 sample of 300: F1 0.492 -> 0.514
when they stopped). In English the wider search measured better (XQuAD 300: 0.216 against
0.211; CMU LTI 100: 0.157 against 0.147), so it stays (``docs/finetune.md``, "The
extractor")."""
MAX_ALIGNED_WORDS = 12
"""Longest span :func:`aligned_span` returns; a longer gap is not taken as the answer."""
QUESTION_WORDS_BN = frozenset(
    normalize_text(word)
    for word in (
        "কে", "কী", "কি", "কোন", "কোনটি", "কোনগুলো", "কোনো", "কোথায়", "কোথা", "কোথাকার", "কবে",
        "কখন", "কত", "কতটা", "কতো", "কতজন", "কতটি", "কততম", "কেন", "কিভাবে", "কীভাবে", "কার",
        "কাকে", "কাদের", "কারা", "কয়", "কয়টি", "কিসের", "কীসের", "কিসে", "কীসে", "কেমন", "কিরূপ",
        "কীরূপ",
    )
)  # fmt: skip
"""Bangla question words, as whole tokens after :func:`~kbqa.text.normalize_text`."""
CLAUSE_QUESTION_WORDS = frozenset({"কেন", "কিভাবে", "কীভাবে", "কেমন"})
"""*Why* and *how*: answered by a clause, not by the words in the question word's place
(aligning them lowered F1 on those questions), so :func:`aligned_span` leaves them alone."""
MIN_STEM_CHARS = 3
"""Two words are forms of one word (:func:`same_stem`) when they share a prefix of at least this
many characters that is also at least :data:`STEM_SHARE` of the shorter word."""
STEM_SHARE = 0.6

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
    """An extracted span: the answer, the rule that found it (a pattern name, ``aligned``,
    ``overlap`` or ``yes/no``), the chunk it came from, the overlap score of its sentence, the
    sentence itself, and ``coverage``: the share (0-1) of the question's content words (not
    :data:`STOPWORDS`) that the sentence holds."""

    answer: str
    method: str
    chunk_id: int
    score: float
    sentence: str = ""
    coverage: float = 0.0


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
    overlaps: list[tuple[int, int, int, str]] = []  # (overlap, rank, chunk_id, sentence)
    for rank, (chunk_id, text) in enumerate(passages):
        for sent in sentences(normalize_text(text)):
            overlaps.append((len(q_words & set(tokenize(sent))), rank, chunk_id, sent))
    if not overlaps or max(o[0] for o in overlaps) < 1:
        return None  # no sentence shares a content word with the question
    overlaps.sort(key=lambda o: (-o[0], o[1]))  # most shared words, then retrieval rank
    # the score: shared words, ties broken by rank (a hundredth per rank)
    scored = [(overlap - 0.01 * rank, chunk_id, sent) for overlap, rank, chunk_id, sent in overlaps]

    def found(answer: str, method: str, score: float, chunk_id: int, sent: str) -> Extraction:
        coverage = len(q_words & set(tokenize(sent))) / len(q_words)
        return Extraction(answer, method, chunk_id, score, sent, coverage)

    kind = answer_kind(question, question_type)
    if kind == "yes/no":
        return found(YES.get(language, YES["en"]), "yes/no", *scored[0])
    names = _TYPE_PATTERNS.get(kind, [])
    searched = 1 if language == "bn" and kind not in CONTACT_KINDS else SENTENCES_SEARCHED
    for score, chunk_id, sent in scored[:searched]:  # best sentence first, then
        for name in names:  # the pattern families in order of preference
            for match in PATTERNS[name].finditer(sent):
                span = " ".join(match.group(0).split()).strip(" ,")
                if span and not (_content_words(span) and _content_words(span) <= q_words):
                    return found(span, name, score, chunk_id, sent)
    score, chunk_id, sent = scored[0]
    if not sent:
        return None
    aligned = aligned_span(sent, question) if language == "bn" else None
    if aligned and (trimmed := " ".join(_trim_edges(aligned.split())).strip(" ,;:")):
        return found(trimmed, "aligned", score, chunk_id, sent)
    return found(_novel_span(sent, question), "overlap", score, chunk_id, sent)


def same_stem(a: str, b: str) -> bool:
    """Whether tokens ``a`` and ``b`` are likely forms of one word: equal, or sharing a prefix of
    :data:`MIN_STEM_CHARS` characters that is :data:`STEM_SHARE` of the shorter one (Bangla case
    endings: ``ভাষায়`` and ``ভাষার``, ``সুশ্রুতের`` and ``সুশ্রুত``). Tokens with digits match
    only when equal."""
    if a == b:
        return True
    if any(c.isdigit() for c in a + b):
        return False  # 1971 and 1975 are different years
    shorter = min(len(a), len(b))
    shared = next((i for i in range(shorter) if a[i] != b[i]), shorter)
    return shared >= MIN_STEM_CHARS and shared >= STEM_SHARE * shorter


def aligned_span(sentence: str, question: str, max_words: int = MAX_ALIGNED_WORDS) -> str | None:
    """The words of ``sentence`` that stand where the question word stands in ``question``.

    Bangla leaves its question word in place (*wh-in-situ*): ``দ্বিতীয় বিশ্বযুদ্ধে কোন দেশ
    প্রবেশের ফলে ...?`` is answered by ``দ্বিতীয় বিশ্বযুদ্ধে মার্কিন যুক্তরাষ্ট্রের প্রবেশের
    ফলে ...``. The nearest content word before the question word and the nearest one after it
    (:data:`STOPWORDS` aside) are found in the sentence (:func:`same_stem`); the answer is what
    lies between them, less question words at its edges. With only a left anchor it is the run
    of non-question words after it; with only a right anchor, the run before it.

    Args:
        sentence: The sentence the extractor chose.
        question: A Bangla question.
        max_words: A longer span is not returned.

    Returns:
        The span (the sentence's own words, punctuation at its edges removed), or None when the
        question has no question word, asks *why*/*how* (:data:`CLAUSE_QUESTION_WORDS`) or a
        list (a doubled question word: ``কি কি``, ``কোন কোন``), or no anchor is in the sentence.
    """
    q_tokens = tokenize(question)
    at = next((i for i, t in enumerate(q_tokens) if t in QUESTION_WORDS_BN), None)
    if at is None or q_tokens[at] in CLAUSE_QUESTION_WORDS:
        return None
    if any(a == b and a in QUESTION_WORDS_BN for a, b in itertools.pairwise(q_tokens)):
        return None  # a list question
    content = [t for t in q_tokens if t not in STOPWORDS and t not in QUESTION_WORDS_BN]
    words = sentence.rstrip("।.?!").split()
    stems = [next(iter(tokenize(w)), "") for w in words]
    asked = [
        bool(t) and (t in QUESTION_WORDS_BN or any(same_stem(t, q) for q in content)) for t in stems
    ]

    def places(token: str) -> list[int]:
        return [i for i, t in enumerate(stems) if t and same_stem(t, token)]

    before = [t for t in q_tokens[:at] if t not in STOPWORDS]
    after = [t for t in q_tokens[at + 1 :] if t not in STOPWORDS]
    left = next((p for t in reversed(before) if (p := places(t))), [])
    right = next((p for t in after if (p := places(t))), [])
    if left and right:
        gaps = [(end - start, start, end) for start in left for end in right if end > start + 1]
        if not gaps:
            return None
        _, lo, hi = min(gaps)
        span = list(range(lo + 1, hi))
    elif left:
        span = list(range(max(left) + 1, len(words)))
    elif right:
        span = list(range(min(right)))
    else:
        return None
    while span and asked[span[0]]:
        span = span[1:]
    while span and asked[span[-1]]:
        span = span[:-1]
    if left and not right:  # the first run after the anchor
        span = list(itertools.takewhile(lambda i: not asked[i], span))
    elif right and not left:  # the last run before it
        span = list(itertools.takewhile(lambda i: not asked[i], span[::-1]))[::-1]
    if not span or len(span) > max_words:
        return None
    text = " ".join(words[i] for i in span).strip(" ,;:()\"'")
    return text if tokenize(text) else None  # punctuation alone is no answer


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
