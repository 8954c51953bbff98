"""The pattern extractor: an answer span without an LLM, by patterns and sentence overlap
(type-aware RAG seed).

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

from dataclasses import dataclass

import regex

from kbqa.answers.aligned import aligned_span
from kbqa.answers.patterns import EDGE_WORDS, KEYWORD_TYPES, PATTERNS, STOPWORDS, TYPE_PATTERNS
from kbqa.answers.vocabulary import YES
from kbqa.prompts.injection import is_prompt_like
from kbqa.retrieval.tokenizer import tokenize
from kbqa.text import normalize_text

__all__ = [
    "PATTERNS",
    "STOPWORDS",
    "Extraction",
    "aligned_span",
    "answer_kind",
    "extract_answer",
    "sentences",
]


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

_SENTENCE_END = regex.compile(
    r"(?<!\b(?:Dr|Prof|Mr|Mrs|Ms|St|Jr|Sr|vs|etc|Inc|No|e\.g|i\.e|[A-Z]|ড|মো)\.)(?<=[।.?!])\s+|\n+"
)
"""Sentence boundary: after ``।`` ``.`` ``?`` ``!`` unless the dot ends a title or initial."""


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
    for kind, pattern in KEYWORD_TYPES:
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
        question_type: From :func:`kbqa.answers.language.question_type`.
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
            if is_prompt_like(sent):  # text posing as the prompt is no answer's source
                continue
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
    names = TYPE_PATTERNS.get(kind, [])
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


def typed_hint(
    question: str, question_type: str, passages: list[tuple[int, str]], language: str = "bn"
) -> str:
    """The span a typed pattern (an email, a date, a number...) finds in ``passages``, or
    ``""`` when only the sentence-overlap scorer or the yes/no rule answers: the second
    candidate the verifier is shown (:func:`kbqa.prompts.verify.fit_verify_prompt`), in serving
    and in its training data alike."""
    found = extract_answer(question, question_type, passages, language)
    return found.answer if found and found.method not in ("overlap", "yes/no") else ""
