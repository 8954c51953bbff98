"""Snapping an answer to the context it was read from: the context's own span and spelling.

:func:`snap_to_span` replaces a free-form answer by the most similar context span (``snap``
grounding, :mod:`kbqa.llm.grounding`); :func:`snap_to_context` restores the context's spelling of
a date, number, code or degree (type-aware RAG seed); :func:`ground_answer` keeps an answer only
when a passage holds it (:func:`grounded`).
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

import regex

from kbqa.answers.normalize import normalize_answer
from kbqa.answers.vocabulary import EDGE, YES_NO_FORMS

MIN_SNAP_RATIO = 0.6
"""An answer is replaced by a context span only when their character similarity reaches this;
below it the answer is left as the model wrote it."""
MAX_EXTRA_WORDS = 3
"""Spans considered by :func:`snap_to_span` are at most this many words longer than the answer."""
_WORD = regex.compile(r"\S+")
_EDGE = EDGE


_WORD_CHAR = regex.compile(r"[\p{L}\p{M}\p{N}]")
_DEGREE = regex.compile(
    r"^(?:ph\.?\s?d|d\.?\s?phil|m\.?\s?sc?|b\.?\s?sc?|m\.?\s?a|b\.?\s?a|m\.?\s?eng|b\.?\s?eng|"
    r"mba|m\.?\s?phil|ll\.?\s?[bm]|m\.?\s?d)\.?(?:\s|$)",
    regex.I,
)
"""Degree abbreviations (``PhD``, ``M.S.``, ``BSc``...) at the start of an answer."""
_ASCII_TO_BENGALI = str.maketrans("0123456789", "০১২৩৪৫৬৭৮৯")
_BENGALI_TO_ASCII = str.maketrans("০১২৩৪৫৬৭৮৯", "0123456789")
YES_NO_WORDS = YES_NO_FORMS
"""Normalised yes/no answers: grounded by the question, not by a passage."""
MAX_SNAP_CHARS = 60
"""Longer answers are left as the model wrote them."""


def _char_pattern(ch: str) -> str:
    if ch.isdigit():
        ascii_digit = ch.translate(_BENGALI_TO_ASCII)
        return f"[{ascii_digit}{ascii_digit.translate(_ASCII_TO_BENGALI)}]"
    return str(regex.escape(ch))


def _stem_hit(word: str, answer_words: set[str]) -> bool:
    """``word`` shares its first two letters with a word of the answer (Bangla case endings
    change the end of a word, not its start)."""
    return any(word[:2] == a[:2] for a in answer_words)


def snap_to_span(answer: str, passages: Sequence[str], min_ratio: float = MIN_SNAP_RATIO) -> str:
    """The context's own span for a free-form answer.

    An answer found in a passage (after :func:`~kbqa.answers.normalize.normalize_answer`) is kept
    as it is. Otherwise the word spans of every passage that start and end with a word sharing
    its first two letters with an answer word, up to :data:`MAX_EXTRA_WORDS` longer than the
    answer, are compared with it by character similarity (difflib's ratio, 2M/T, on normalised
    text, which tolerates Bangla case endings: ``১৯১৩ সালের`` vs ``১৯১৩ সালে``); the most similar
    span, surrounding punctuation removed, replaces the answer when its ratio reaches
    ``min_ratio`` (ties: the shorter span).

    Args:
        answer: A cleaned short answer (not an abstention).
        passages: The texts it was read from.
        min_ratio: Least similarity for a replacement.

    Returns:
        ``answer`` or a span of one of ``passages``.
    """
    norm = normalize_answer(answer)
    if not norm or not passages:
        return answer
    if any(f" {norm} " in f" {normalize_answer(p)} " for p in passages):
        return answer
    answer_words = set(norm.split())
    longest = len(answer_words) + MAX_EXTRA_WORDS
    best, best_key = answer, (min_ratio, 0)
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(norm)
    for passage in passages:
        words = [(m.start(), m.end(), normalize_answer(m.group())) for m in _WORD.finditer(passage)]
        for i, (start, _, first) in enumerate(words):
            if not first or not _stem_hit(first, answer_words):
                continue
            for j in range(i, min(len(words), i + longest)):
                last = words[j][2]
                if not last or not _stem_hit(last.split()[-1], answer_words):
                    continue
                text = " ".join(w[2] for w in words[i : j + 1] if w[2])
                matcher.set_seq1(text)
                key = (matcher.ratio(), -(j - i))
                if key > best_key:
                    span = passage[start : words[j][1]].strip(_EDGE)
                    if span:
                        best, best_key = span, key
    return best


def snap_to_context(answer: str, question_type: str, passages: list[str]) -> str:
    """The context's own spelling of a date, number, code or degree the model re-wrote.

    Applies to answers with a digit, to ``date``/``number`` questions and to degree
    abbreviations (type-aware RAG seed: normalise dates, degrees and course codes per type).
    When the answer is not verbatim in a passage but is there up to case, spacing and
    ``.``/``-``/``/``/``,`` separators, or with Bangla instead of ASCII digits (or the reverse),
    the passage's span is returned: ``cs161`` -> ``CS 161``, ``PhD`` -> ``Ph.D``,
    ``March 26 1971`` -> ``March 26, 1971``, ``1971`` -> ``১৯৭১``. Otherwise ``answer`` is returned
    unchanged.

    Args:
        answer: A cleaned short answer.
        question_type: The classify node's type.
        passages: The texts the answer was read from (chunks or web snippets).
    """
    if not answer or len(answer) > MAX_SNAP_CHARS or not passages:
        return answer
    if not (
        question_type in ("date", "number")
        or any(ch.isdigit() for ch in answer)
        or _DEGREE.match(answer)
    ):
        return answer
    if any(answer in text for text in passages):
        return answer
    parts: list[str] = []
    gap = answer_digit = False
    for ch in answer:
        if not _WORD_CHAR.match(ch):
            gap = True
            continue
        if parts:  # between two word characters: the answer's gap, or an optional separator
            # (never inside a digit run: 35 must not match "3-5")
            digits = ch.isdigit() and answer_digit
            parts.append(r"[\s.,\-/]{1,3}" if gap else "" if digits else r"[\s.\-]?")
        parts.append(_char_pattern(ch))
        gap = False
        answer_digit = ch.isdigit()
    if len(parts) < 3:  # fewer than two word characters
        return answer
    pattern = regex.compile(
        r"(?<![\p{L}\p{M}\p{N}])" + "".join(parts) + r"(?![\p{L}\p{M}\p{N}])", regex.I
    )
    for text in passages:
        if m := pattern.search(text):
            return str(m.group(0))
    return answer


def grounded(answer: str, texts: Sequence[str]) -> bool:
    """The answer occurs, as whole words, in one of ``texts``, both normalised
    (:func:`~kbqa.answers.normalize.normalize_answer`: case, punctuation, Bangla digits).

    The one grounding rule of the graph: verify takes a correction, web search an answer from
    its snippets, and finalize any answer, only when it holds."""
    norms = [f" {normalize_answer(t)} " for t in texts]
    norm = normalize_answer(answer)
    return bool(norm) and any(f" {norm} " in t for t in norms)


def complete_last_word(answer: str, passages: Sequence[str]) -> str:
    """The answer with a cut-off last word completed from the passage that holds it: a reader
    stopped by its token budget ends ``... রিসার্চ ল্যাবরেট`` where the context says
    ``ল্যাবরেটরি``. Only letters complete a word: an answer ending in a digit is returned as it
    is, as is one no passage holds as a word-initial string."""
    core = answer.strip(_EDGE)
    if not core or not regex.match(r"[\p{L}\p{M}]", core[-1]):
        return answer  # a number is not completed: "June 19" must not become "June 1962"
    pattern = regex.compile(
        r"(?<![\p{L}\p{M}\p{N}])" + regex.escape(core) + r"[\p{L}\p{M}]*", regex.I
    )
    for text in passages:
        if m := pattern.search(text):
            return str(m.group(0))
    return answer


def ground_answer(answer: str, passages: Sequence[str]) -> str:
    """The answer if it is :func:`grounded` in ``passages`` (after :func:`complete_last_word`),
    else ``""``: an answer that is in no passage the reader saw is not an answer (a 270M model
    otherwise invents ``1920°C`` for a boiling point the knowledge base lacks). Yes/no words
    (``হ্যাঁ``, ``না``, ``Yes``, ``No``) need no passage.

    Args:
        answer: The final short answer (not an abstention).
        passages: The texts it was read from (chunks or web snippets); empty: nothing to check
            against, and ``answer`` is returned.
    """
    if not passages or normalize_answer(answer) in YES_NO_WORDS:
        return answer
    if grounded(answer, passages):
        return answer
    completed = complete_last_word(answer, passages)
    return completed if completed != answer and grounded(completed, passages) else ""
