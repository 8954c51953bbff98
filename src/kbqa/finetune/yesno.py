"""Yes/no questions made by rule from an evidence sentence (Haque 2020 asks none; BanglaRQA asks
128 among its 1,126 answerable validation questions).

The sentence of the annotators' ``evidence`` that holds the answer, asked as a question
(``... কি?``, or ``কি`` after its first word, the two forms BanglaRQA uses), is true: ``হ্যাঁ``.
The same sentence with its answer swapped for another question's answer of the same kind
(:func:`same_kind`) is false: ``না``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import regex

from kbqa.answers.normalize import answer_in_context, normalize_answer

MIN_STATEMENT_WORDS, MAX_STATEMENT_WORDS = 5, 30
FINAL_KI_SHARE = 0.7
"""Share of made-up yes/no questions asked with a final ``কি`` (``... যাবে কি?``); the rest put
``কি`` after the first word (``এটি কি ...?``), the other form BanglaRQA uses."""
TRAILING = " \t\n।.,;:!?|"
"""Characters stripped from the end of a statement or answer."""
SENTENCE_END = regex.compile(r"(?<=[।!?])\s*")
"""Splits text after a danda, ``!`` or ``?`` (also cuts answer sentences out of a context)."""
_DIGIT = regex.compile(r"\p{N}")
_BENGALI = regex.compile(r"\p{Bengali}")


def yes_no_question(
    evidence: str, answers: Sequence[str], truth: bool, swap: str, rng: random.Random
) -> tuple[str, str] | None:
    """``(question, evidence sentence)`` for a yes (``truth``) or no question, or None when no
    sentence of ``evidence`` holds an answer in :data:`MIN_STATEMENT_WORDS` to
    :data:`MAX_STATEMENT_WORDS` words, when swapping in ``swap`` would leave it true, or when
    ``evidence`` has no Bangla letter (the question forms are Bangla).
    """
    if not _BENGALI.search(evidence):  # the rules ask in Bangla
        return None
    statement = answer = ""
    for sentence in SENTENCE_END.split(evidence):  # the sentence holding the answer
        sentence = " ".join(sentence.split()).rstrip(TRAILING)
        answer = next((a.strip() for a in answers if a.strip() and a.strip() in sentence), "")
        if answer:
            statement = sentence
            break
    n_words = len(statement.split())
    if not answer or not MIN_STATEMENT_WORDS <= n_words <= MAX_STATEMENT_WORDS:
        return None
    original = statement
    if not truth:
        if answer_in_context([swap], statement) or any(
            normalize_answer(swap) == normalize_answer(a) for a in answers
        ):
            return None  # the swap would leave the statement true
        statement = statement.replace(answer, swap, 1)
    words = statement.split()
    if rng.random() < FINAL_KI_SHARE or len(words) < 4:
        return f"{statement} কি?", original
    return f"{words[0]} কি {' '.join(words[1:])}?", original


def same_kind(answer: str, pool: Sequence[str], rng: random.Random) -> str | None:
    """Another answer to swap in: one with digits for an answer with digits, else one of a
    similar word count; None when the pool holds no other answer."""
    digits = bool(_DIGIT.search(answer))
    n = len(answer.split())
    matches = [
        a
        for a in pool
        if a != answer and bool(_DIGIT.search(a)) == digits and abs(len(a.split()) - n) <= 1
    ]
    if matches:
        return rng.choice(matches)
    others = [a for a in pool if a != answer]
    return rng.choice(others) if others else None
