"""Abstention: is a reader's output an answer or a refusal to answer?

Besides the fixed phrase (HybridRAG-BN: ``Context-এ তথ্য নেই``), small models paraphrase it, so
close paraphrases in Bangla and English, empty output and the question echoed back also count.
"""

from __future__ import annotations

import regex

from kbqa.answers.cleanup import clean_answer, cut_answer
from kbqa.answers.language import question_type
from kbqa.answers.vocabulary import YES_NO_PATTERN
from kbqa.prompts.answer import ABSTENTION_PHRASE, ABSTENTION_PHRASE_EN
from kbqa.text import normalize_text

_NON_WORD = regex.compile(r"[^\p{L}\p{M}\p{N}]+")

ABSTENTION_SUBSTRINGS = (
    "তথ্য নেই",
    "তথ্য নাই",
    "জানা নেই",
    "উত্তর নেই",
    "উল্লেখ নেই",
    "উল্লেখ করা হয়নি",
    "উত্তর নির্দিষ্ট নয়",
    "বলা হয়নি",
    "জানি না",
    "i don t know",
    "i do not know",
    "not mentioned",
    "no information",
    "not provided",
    "cannot be determined",
    "can not be determined",
    "not in the context",
    "context does not",
    "does not contain",
    "not specified",
    "not stated",
    "no answer",
    "does not mention",
    "do not know",
    "cannot answer",
    "can not answer",
    "unable to answer",
    "not found",
    "no relevant information",
    "not sure",
    "answer is unknown",
    "তথ্য পাওয়া যায়নি",
    "জানা যায়নি",
    "উল্লেখ করা নেই",
    "দেওয়া নেই",
    "দেয়া নেই",
    "উত্তর দেওয়া সম্ভব নয়",
    "উত্তর দেয়া সম্ভব নয়",
)
ABSTENTION_EXACT = ("unknown", "none", "n a", "na", "unanswerable", "not available", "অজানা")


_CONTRACTIONS = (
    (regex.compile(r"\bcan['’]t\b", regex.I), "can not"),
    (regex.compile(r"\bwon['’]t\b", regex.I), "will not"),
    (regex.compile(r"n['’]t\b", regex.I), " not"),
    (regex.compile(r"\bi['’]m\b", regex.I), "i am"),
)
_YES_NO_ANSWER = regex.compile(rf"^\s*({YES_NO_PATTERN})\s*[,.।;:!]", regex.I)
"""``No, it does not contain gluten`` is an answer, not an abstention."""
ECHO_COVERAGE = 0.5
"""An answer made only of the question's words and holding at least this share of them is the
question echoed back (Gemma 3 270M echoes a question, or its first part, instead of abstaining).
Not applied to yes/no questions, where ``Paris is the capital of France`` answers."""
MIN_PHRASE_PREFIX = 8
"""A cut-off fixed phrase (``Context-এ তথ্য``) counts from this many normalised characters."""


def _norm(text: str) -> str:
    for pattern, repl in _CONTRACTIONS:
        text = pattern.sub(repl, text)
    text = normalize_text(text).lower()
    return " ".join(_NON_WORD.sub(" ", text).split())


_NORMED_SUBSTRINGS = tuple(_norm(p) for p in ABSTENTION_SUBSTRINGS)


FIXED_PHRASES = (ABSTENTION_PHRASE, ABSTENTION_PHRASE_EN)
"""The built-in abstention answers of both languages: always recognised, whatever ``phrase``
a run sets."""
_NORMED_FIXED = tuple(_norm(p) for p in FIXED_PHRASES)


def is_abstention(answer: str, phrase: str, question: str = "") -> bool:
    """True when ``answer`` is an abstention.

    Matches, after expanding English contractions, NFC, lower-casing and dropping
    punctuation: the empty answer, the fixed ``phrase`` or one of :data:`FIXED_PHRASES` (Bangla,
    English) as whole words anywhere in the answer
    (``N/A`` is not in ``Sudan Airways``) or cut off
    (a prefix of at least :data:`MIN_PHRASE_PREFIX` characters), a known paraphrase
    (``তথ্য নেই``, ``জানা যায়নি``, ``I don't know``, ``not mentioned``...) unless the answer
    opens with yes/no and a comma (``No, it does not contain gluten``), a whole answer of
    ``unknown``/``none``, or the question echoed back, whole or mostly (:func:`is_echo`).
    """
    norm = _norm(answer)
    if not norm:
        return True
    if norm in ABSTENTION_EXACT:
        return True
    for fixed in {_norm(phrase), *_NORMED_FIXED}:  # an empty phrase: only the other rules
        if fixed and f" {fixed} " in f" {norm} ":
            return True
        if fixed and len(norm) >= MIN_PHRASE_PREFIX and fixed.startswith(norm):
            return True
    if _YES_NO_ANSWER.match(answer):
        return False
    if _has_paraphrase(norm):
        return True
    return bool(question) and is_echo(norm, _norm(question), question)


def _has_paraphrase(norm: str) -> bool:
    """A known abstention paraphrase occurs in the normalised answer."""
    return any(p in norm for p in _NORMED_SUBSTRINGS)


def is_echo(answer_norm: str, question_norm: str, question: str) -> bool:
    """The normalised answer is the question, or (outside yes/no questions) only words of the
    question covering at least :data:`ECHO_COVERAGE` of them."""
    answer_norm, question_norm = _fold_variants(answer_norm), _fold_variants(question_norm)
    if answer_norm == question_norm:
        return True
    words, asked = set(answer_norm.split()), set(question_norm.split())
    if not words or not words <= asked or question_type(question) == "yes/no":
        return False
    return len(words) >= ECHO_COVERAGE * len(asked)


SPELLING_VARIANTS = {"কী": "কি"}
"""Words written two ways in everyday Bangla (``কী``/``কি``, *what*); an echo check compares
them as one."""


def _fold_variants(norm: str) -> str:
    return " ".join(SPELLING_VARIANTS.get(w, w) for w in norm.split())


def settled_abstention(partial: str, phrase: str, max_chars: int = 200) -> bool:
    """True when a generation cut off here is an abstention whatever it goes on to say.

    The check the generator runs on each streamed token, so a model that starts to abstain is
    stopped there instead of spending its token budget on the explanation: the first answer
    line so far (:func:`~kbqa.answers.cleanup.clean_answer`) already holds the fixed ``phrase``
    or a known paraphrase (``ABSTENTION_SUBSTRINGS``) and does not open with yes/no and a comma.
    Lines only grow, so :func:`judge` reaches the same verdict on the full output.
    """
    line = clean_answer(partial, max_chars)
    norm = _norm(line)
    fixed = _norm(phrase)
    if not norm:
        return False
    if fixed and f" {fixed} " in f" {norm} ":
        return True
    return not _YES_NO_ANSWER.match(line) and _has_paraphrase(norm)


def judge(raw: str, question: str, phrase: str, max_chars: int = 200) -> tuple[str, bool]:
    """``(answer, abstained)`` for a model's raw output to ``question``: the cleaned short
    answer (:func:`~kbqa.answers.cleanup.clean_answer`, at most ``max_chars`` characters), or
    the abstention ``phrase`` when :func:`is_abstention` says so or nothing is left after
    cleaning."""
    line = clean_answer(raw, max_chars=len(raw))
    # judged on the answer line only ("ঢাকা\n(not mentioned elsewhere)" is an answer), and
    # before the cut to max_chars (a phrase cut to "Conte" is still an abstention)
    abstained = not line or is_abstention(line, phrase, question)
    return (phrase if abstained else cut_answer(line, max_chars)), abstained
