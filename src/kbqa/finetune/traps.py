"""Lexical traps made by rule (issue 32, part 4): a training question changed so that its own
passage, which still matches its words, no longer answers it; the reader must abstain.

- :func:`relation_trap`: the relation swapped for its opposite (*born* for *died*), when the
  passage says nothing of the opposite.
- :func:`entity_trap`: a name swapped for another of the same type (:func:`name_lexicon`: the
  training set's *who* and *where* answers) that the passage does not hold.
- :func:`number_trap` (opt-in, ``--trap-rules ...,number``): a year or other number of the
  question swapped for one the passage does not hold (``১৯৭১ সালে`` -> ``১৯৫৮ সালে``).

The trap set of ``benchmarks/data/traps.qa.jsonl`` was written by hand the same way; it is a
check and was never read by these rules. Every function is pure (a seeded ``random.Random`` is
passed in) and returns None when its rule does not apply.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence

import regex

from kbqa.answers.normalize import normalize_answer
from kbqa.finetune.kinds import QUESTION_WORDS, WORD_END, WORD_START

_WORD = regex.compile(r"[\p{L}\p{M}\p{N}\u200c\u200d]+(?:[-'][\p{L}\p{M}\p{N}\u200c\u200d]+)*")
SUFFIXES = ("য়ের", "য়ের", "ের", "এর", "কে", "তে", "য়", "য়", "র")
"""Bangla case endings kept when a name is swapped (``নোবেলের`` -> ``<name>ের``)."""
NAME_TYPES = ("person", "location")
"""Question types whose answers are names (:func:`kbqa.answers.language.question_type`)."""
RARE_CHUNKS = 3
"""A name is in at most this many chunks of the knowledge base (:func:`name_lexicon`)."""


def _stem(word: str) -> tuple[str, str]:
    """``(stem, ending)``: a Bangla case ending split off a word of over three letters more."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)], suffix
    return word, ""


def is_name(word: str) -> bool:
    """A word of three letters or more, without digits, capitalised if it is English."""
    if len(word) < 3 or any(c.isdigit() for c in word) or not _WORD.fullmatch(word):
        return False
    return not word.isascii() or word[0].isupper()


def name_lexicon(
    answered: Iterable[tuple[str, str]], chunk_count: Callable[[str], int] | None = None
) -> dict[str, list[str]]:
    """The names of a training set by type: the words (:func:`is_name`, not question words) of
    the answers of at most three words to its *who* and *where* questions.

    Args:
        answered: ``(question type, answer)`` pairs; types other than :data:`NAME_TYPES` are
            ignored.
        chunk_count: How many chunks of the knowledge base hold a word. With it, only words in
            at most :data:`RARE_CHUNKS` chunks are names: Bangla has no capitals, and its
            *who* and *where* answers hold common nouns too (``আদালত``, ``উপজেলা``).

    Returns:
        ``{type: sorted names}`` for each of :data:`NAME_TYPES`.
    """
    names: dict[str, set[str]] = {t: set() for t in NAME_TYPES}
    for qtype, answer in answered:
        words = answer.split()
        if qtype in names and len(words) <= 3:
            names[qtype].update(
                _stem(w)[0] for w in words if is_name(w) and w.lower() not in QUESTION_WORDS
            )
    if chunk_count is not None:
        names = {t: {n for n in ns if chunk_count(n) <= RARE_CHUNKS} for t, ns in names.items()}
    return {t: sorted(n) for t, n in names.items()}


def entity_trap(
    question: str,
    answers: Sequence[str],
    shown: str,
    names: Mapping[str, Sequence[str]],
    rng: random.Random,
) -> str | None:
    """``question`` with a name that ``shown`` (the passage read) holds swapped for another name
    of the same type that ``shown`` does not hold, so that the passage no longer answers it.

    Args:
        question: The answerable question.
        answers: Its gold answers (their words are never swapped).
        shown: The context the reader is shown.
        names: Names by type (:func:`name_lexicon`): a question word is a name when its stem is
            one, and is swapped for one of the same type.
        rng: Seeded choice of the word and the name.

    Returns:
        The trap question, or None when no question word is a name the passage holds, or
        :data:`NAME_DRAWS` draws found no name of its type and script that ``shown`` lacks.
    """
    kind = {n: t for t, ns in names.items() for n in ns}
    answer_words = {w for a in answers for w in normalize_answer(a).split()}
    context = f" {normalize_answer(shown)} "
    candidates = []
    for m in _WORD.finditer(question):
        word = m.group(0)
        stem, _ = _stem(word)
        if stem not in kind or word.lower() in QUESTION_WORDS:
            continue
        if normalize_answer(word) in answer_words or normalize_answer(stem) in answer_words:
            continue
        if any(f" {normalize_answer(w)} " in context for w in (word, stem)):
            candidates.append((m.start(), word, stem))
    if not candidates:
        return None
    start, word, stem = rng.choice(candidates)
    ending = word[len(stem) :]
    pool = names[kind[stem]]
    for _ in range(NAME_DRAWS):
        name = rng.choice(pool)
        if name == stem or name.isascii() != word.isascii():
            continue
        if f" {normalize_answer(name)} " not in context:
            return str(question[:start] + name + ending + question[start + len(word) :])
    return None


NAME_DRAWS = 50
"""Random draws from the names before an entity trap gives up."""


RELATIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("জন্মগ্রহণ করেন", "মৃত্যুবরণ করেন", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("জন্মগ্রহণ করেছিলেন", "মৃত্যুবরণ করেছিলেন", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("মৃত্যুবরণ করেন", "জন্মগ্রহণ করেন", ("জন্ম",)),
    ("মারা যান", "জন্মগ্রহণ করেন", ("জন্ম",)),
    ("জন্ম", "মৃত্যু", ("মৃত্যু", "মারা", "প্রয়াত")),
    ("মৃত্যু", "জন্ম", ("জন্ম",)),
    ("প্রতিষ্ঠিত হয়", "বিলুপ্ত হয়", ("বিলুপ্ত", "বন্ধ")),
    ("শুরু", "শেষ", ("শেষ", "সমাপ্ত")),
    ("পিতা", "মাতা", ("মাতা", "মা", "মায়ের")),
    ("পিতার", "মাতার", ("মাতা", "মা", "মায়ের")),
    ("বাবা", "মা", ("মাতা", "মা", "মায়ের")),
    ("বাবার", "মায়ের", ("মাতা", "মা", "মায়ের")),
    ("স্বামী", "স্ত্রী", ("স্ত্রী",)),
    ("স্ত্রী", "স্বামী", ("স্বামী",)),
    ("বৃহত্তম", "ক্ষুদ্রতম", ("ক্ষুদ্রতম", "ছোট")),
    ("founded", "dissolved", ("dissolved", "closed", "abolished", "disbanded")),
    ("largest", "smallest", ("smallest",)),
    ("father", "mother", ("mother",)),
    ("mother", "father", ("father",)),
    ("husband", "wife", ("wife",)),
    ("wife", "husband", ("husband",)),
    ("north", "south", ("south",)),
    ("east", "west", ("west",)),
)
"""``(words in the question, their opposite, stems of the opposite)``: a relation trap asks the
opposite, and only when the passage holds none of its stems (so it cannot answer it). Matched as
written (lower case): ``Born`` in a name is not the verb. English birth and death are swapped
with their verb forms (``was X born`` and ``did X die``) before these."""
_RELATION_RES = (
    # English birth and death change the verb's form: "when was X born" / "when did X die"
    (
        regex.compile(r"\b(?:was|were) (?P<who>[^?]{1,60}?) born\b"),
        r"did \g<who> die",
        ("died", "death", "dead", "die"),
    ),
    (regex.compile(r"\bdid (?P<who>[^?]{1,60}?) die\b"), r"was \g<who> born", ("born", "birth")),
    *(
        (regex.compile(rf"{WORD_START}{regex.escape(said)}{WORD_END}"), opposite, absent)
        for said, opposite, absent in RELATIONS
    ),
)


def relation_trap(question: str, shown: str) -> str | None:
    """``question`` with its relation swapped for the opposite (:data:`RELATIONS`), when
    ``shown`` holds no word of the opposite, or None."""
    words = set(normalize_answer(shown).split())
    for pattern, opposite, absent in _RELATION_RES:
        if pattern.search(question) is None:
            continue
        if any(
            w == stem or (len(stem) >= 3 and w.startswith(stem)) for w in words for stem in absent
        ):
            continue  # a short stem (মা) must be the whole word: মাস is not মা
        return str(pattern.sub(opposite, question, count=1))
    return None


TRAP_RULES = ("relation", "entity", "number")
"""Every trap rule, in the order they are tried (the first that applies makes the trap)."""
DEFAULT_TRAP_RULES = "relation,entity"
"""The rules a run applies unless told: those the 2026-12-06 readers were trained with, so their
examples are rebuilt exactly."""
_DIGITS = "0123456789"
_BN_DIGITS = "০১২৩৪৫৬৭৮৯"
_NUMBER = regex.compile(r"(?<![\p{N}.,:/])[1-9১-৯][0-9০-৯]{1,8}(?![\p{N}]|[.,:/]\p{Nd})")
"""A whole number of 2-9 ASCII or Bangla digits with no leading zero, not part of a decimal,
time or date written with separators (other scripts' digits are left alone)."""
_ANY_NUMBER = regex.compile(r"(?<!\p{N})\p{N}{1,9}(?!\p{N})")
"""Every run of up to 9 digits a passage holds (a replacement must be none of them)."""
YEAR_SHIFT = 40
"""A year is moved by 1 to this many years, up or down (``1971`` -> ``1958``)."""
DAY_MAX = 31
"""A number up to this (a day of the month, often) is swapped for another in 1..31, so a date
stays a date (``২৬ অক্টোবর`` -> ``১৭ অক্টোবর``)."""


def _is_ours(digits: str) -> bool:
    """All ASCII or Bangla digits (the two scripts a trap writes)."""
    return all(c in _DIGITS or c in _BN_DIGITS for c in digits)


def _as_int(digits: str) -> int:
    return int(digits.translate(str.maketrans(_BN_DIGITS, _DIGITS)))


def _in_script(value: int, like: str) -> str:
    """``value`` written in the digits ``like`` is written in (Bangla or ASCII)."""
    text = str(value)
    return text.translate(str.maketrans(_DIGITS, _BN_DIGITS)) if like[0] in _BN_DIGITS else text


def number_trap(
    question: str, answers: Sequence[str], shown: str, rng: random.Random
) -> str | None:
    """``question`` with a number that ``shown`` holds swapped for one it does not hold, so
    that the passage no longer answers it: a year (1000-2099) moved by 1 to :data:`YEAR_SHIFT`
    years, a number up to :data:`DAY_MAX` drawn from 1 to it, any other drawn with the same
    count of digits. The digits keep their script.

    Args:
        question: The answerable question.
        answers: Its gold answers (a number in one of them is never swapped).
        shown: The context the reader is shown.
        rng: Seeded choice of the number and its replacement.

    Returns:
        The trap question, or None when the question holds no number of two digits or more
        that ``shown`` holds, or :data:`NAME_DRAWS` draws found none that ``shown`` lacks.
    """
    held = {_as_int(m.group(0)) for m in _ANY_NUMBER.finditer(shown) if _is_ours(m.group(0))}
    in_answers = {_as_int(m.group(0)) for a in answers for m in _NUMBER.finditer(a)}
    candidates = [
        m for m in _NUMBER.finditer(question)
        if _as_int(m.group(0)) in held and _as_int(m.group(0)) not in in_answers
    ]  # fmt: skip
    if not candidates:
        return None
    m = rng.choice(candidates)
    digits, value = m.group(0), _as_int(m.group(0))
    for _ in range(NAME_DRAWS):
        if len(digits) == 4 and 1000 <= value < 2100:
            new = min(max(value + rng.choice((-1, 1)) * rng.randint(1, YEAR_SHIFT), 1000), 2099)
        elif value <= DAY_MAX:
            new = rng.randint(1, DAY_MAX)
        else:
            new = rng.randint(10 ** (len(digits) - 1), 10 ** len(digits) - 1)
        if new != value and new not in held and (value <= DAY_MAX or len(str(new)) == len(digits)):
            return question[: m.start()] + _in_script(new, digits) + question[m.end() :]
    return None
