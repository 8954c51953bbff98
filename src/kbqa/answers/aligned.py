"""The aligned span: Bangla keeps its question word in place (wh-in-situ), so the answer stands
in the best sentence where the question word stands in the question (``মাঙ্গা কোন ভাষায় নির্মিত?``
against ``মাঙ্গা জাপানি ভাষায় নির্মিত``: ``জাপানি``)."""

from __future__ import annotations

import itertools

from kbqa.answers.patterns import STOPWORDS
from kbqa.answers.question_words import QUESTION_WORDS_BN
from kbqa.retrieval.tokenizer import tokenize

MAX_ALIGNED_WORDS = 12
"""Longest span :func:`aligned_span` returns; a longer gap is not taken as the answer."""

CLAUSE_QUESTION_WORDS = frozenset({"কেন", "কিভাবে", "কীভাবে", "কেমন"})
"""*Why* and *how*: answered by a clause, not by the words in the question word's place
(aligning them lowered F1 on those questions), so :func:`aligned_span` leaves them alone."""

MIN_STEM_CHARS = 3
"""Two words are forms of one word (:func:`same_stem`) when they share a prefix of at least this
many characters that is also at least :data:`STEM_SHARE` of the shorter word."""

STEM_SHARE = 0.6


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
