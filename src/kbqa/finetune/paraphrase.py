"""Bangla questions asked in another form, by rule, so the reader learns the question and not one
annotation style's phrasing.

Haque 2020's questions are written one way: standard spelling (``কী`` for *what*), honorific
verbs (``করেন``, ``ছিলেন``), ``কত সালে`` for a year. People write ``কি`` for *what* (the common
spelling), plain verbs (``করে``, ``ছিল``), ``কবে`` or ``কোন সালে``, and a space before ``?``.
Each rule below keeps the question's meaning; :func:`paraphrase` applies a random subset of those
that fit, and keeps the rewrite only when the question typer gives it the same type.

Three more rules are opt-in (:data:`EXTRA_RULES`, ``kbqa finetune reader --paraphrase-rules``),
so a run made with the defaults builds the same examples as before they existed:

- ``order``: the question word moved between the front and the end (``কে X দেন?`` and ``X দেন
  কে?``): Bangla allows both, Haque 2020 writes either, and people asking in their own words
  often put it last;
- ``register``: formal (*sadhu*-flavoured) words of kinship and life events put in the colloquial
  register people write (``পিতা`` -> ``বাবা``, ``মৃত্যুবরণ করেন`` -> ``মারা যান``), so the question
  shares fewer words with a passage written formally;
- ``synonym``: one noun or adjective replaced by a dictionary synonym (``প্রেসিডেন্ট`` ->
  ``রাষ্ট্রপতি``; :mod:`kbqa.finetune.synonyms`), so that not all of the question's content
  words are the passage's, as in the questions people write.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from functools import partial

import regex

from kbqa.answers.language import question_type
from kbqa.finetune.synonyms import BANGLA_WORD

_B, _E = r"(?<![\p{L}\p{M}])", r"(?![\p{L}\p{M}])"
HONORIFIC_VERBS = {
    "করেন": "করে",
    "করেছেন": "করেছে",
    "করেছিলেন": "করেছিল",
    "করতেন": "করত",
    "ছিলেন": "ছিল",
    "হন": "হয়",
    "হয়েছেন": "হয়েছে",
    "হয়েছিলেন": "হয়েছিল",
    "দেন": "দেয়",
    "দিয়েছিলেন": "দিয়েছিল",
    "গিয়েছিলেন": "গিয়েছিল",
    "পেয়েছিলেন": "পেয়েছিল",
    "লেখেন": "লেখে",
    "লিখেছেন": "লিখেছে",
    "থাকেন": "থাকে",
    "রয়েছেন": "রয়েছে",
}
"""Honorific verb forms (third person) and their plain forms. Only this direction is applied:
a plain form may be impersonal or passive (``বলা হয়``, ``কী করে`` *how*), where the honorific is
wrong; forms that are also nouns (``পান`` betel, ``যান`` vehicle) are left out."""
_HONORIFIC = regex.compile(rf"{_B}({'|'.join(sorted(HONORIFIC_VERBS, key=len, reverse=True))}){_E}")
_KI_WHAT = regex.compile(rf"{_B}কী{_E}")
_YEAR_WORDS = ("কত সালে", "কোন সালে", "কোন বছর", "কবে")
_YEAR = regex.compile(rf"{_B}(কত সালে|কোন সালে|কোন বছর|কবে){_E}")
_FINAL_MARK = regex.compile(r"\s*[?？]\s*$")


def _ki(q: str, rng: random.Random) -> str | None:
    """``কী`` (*what*, standard) written ``কি``, the common spelling; not the other way, since
    ``কি`` may be the yes/no particle."""
    return _KI_WHAT.sub("কি", q) if _KI_WHAT.search(q) else None


def _honorific(q: str, rng: random.Random) -> str | None:
    """Honorific verbs made plain."""
    if _HONORIFIC.search(q):
        return str(_HONORIFIC.sub(lambda m: HONORIFIC_VERBS[m.group(1)], q))
    return None


def _year(q: str, rng: random.Random) -> str | None:
    """One way of asking for a year swapped for another (``কত সালে`` -> ``কোন বছর``, ``কবে``)."""
    m = _YEAR.search(q)
    if m is None or m.group(1) == "কবে":  # a কবে answer may be a whole date, not a year
        return None
    other = rng.choice([w for w in _YEAR_WORDS if w != m.group(1)])
    return q[: m.start()] + other + q[m.end() :]


def _mark(q: str, rng: random.Random) -> str | None:
    """The question mark with a space before it, or dropped."""
    mark = _FINAL_MARK.search(q)
    if mark is None:
        return None
    current = q[mark.start() :]
    return q[: mark.start()] + rng.choice([m for m in (" ?", "?", "") if m != current])


MOVABLE_WH = ("কে", "কারা", "কাকে", "কোথায়", "কবে", "কখন", "কেন")
"""Question words that stand alone as a phrase, so they can move: not ``কার``/``কোন``/``কত``
(they modify the next word) nor ``কী``/``কি`` (also the yes/no particle)."""
_WH_FIRST = regex.compile(rf"^({'|'.join(MOVABLE_WH)})\s+(\S.*?)(\s*[?？]?)\s*$")
_WH_LAST = regex.compile(rf"^(\S.*?)\s+({'|'.join(MOVABLE_WH)})(\s*[?？]?)\s*$")


def _order(q: str, rng: random.Random) -> str | None:
    """A question word at the front moved to the end, or one at the end moved to the front
    (``কারা X ঘটায়?`` <-> ``X ঘটায় কারা?``); None when the question word is inside, or the
    question would be that word alone."""
    if m := _WH_FIRST.match(q):
        return f"{m.group(2)} {m.group(1)}{m.group(3)}"
    if m := _WH_LAST.match(q):
        return f"{m.group(2)} {m.group(1)}{m.group(3)}"
    return None


REGISTER = {
    "পিতার": "বাবার",
    "পিতা": "বাবা",
    "মাতার": "মায়ের",
    "মাতা": "মা",
    "পুত্রের": "ছেলের",
    "পুত্র": "ছেলে",
    "কন্যার": "মেয়ের",
    "কন্যা": "মেয়ে",
    "মৃত্যুবরণ করেন": "মারা যান",
    "মৃত্যুবরণ করে": "মারা যায়",
    "মৃত্যুবরণ করেছেন": "মারা গেছেন",
    "জন্মগ্রহণ করেন": "জন্মেছিলেন",
    "জন্মগ্রহণ করে": "জন্মেছিল",
    "রচনা করেন": "লেখেন",
    "রচনা করেছেন": "লিখেছেন",
    "নির্মাণ করা হয়": "তৈরি করা হয়",
    "নির্মাণ করেন": "তৈরি করেন",
    "সর্বপ্রথম": "প্রথম",
}
"""Formal words and their colloquial forms (one direction: the colloquial form of a word in a
formal passage). Whole words only; a longer entry is tried first."""
_REGISTER = regex.compile(rf"{_B}({'|'.join(sorted(REGISTER, key=len, reverse=True))}){_E}")


def _register(q: str, rng: random.Random) -> str | None:
    """Formal words put in the colloquial register (:data:`REGISTER`)."""
    if _REGISTER.search(q):
        return str(_REGISTER.sub(lambda m: REGISTER[m.group(1)], q))
    return None


def _synonym(
    q: str, rng: random.Random, table: Mapping[str, list[str]] | None = None
) -> str | None:
    """One word of ``q`` that is a headword of ``table``
    (:func:`kbqa.finetune.synonyms.synonym_table`) replaced by one of its synonyms; None without
    a table or such a word."""
    if not table:
        return None

    def choices(word: str) -> list[str]:  # the word's synonyms that are strings
        found = table.get(word)  # a list, tuple or set (an iterator would be used up here)
        if not isinstance(found, (list, tuple, AbstractSet)):
            return []
        kept = [" ".join(s.split()) for s in found if isinstance(s, str) and s.strip()]
        kept = [s for s in kept if s != word]  # the word itself is no rewrite
        return sorted(kept) if isinstance(found, AbstractSet) else kept  # a set: a fixed order

    spans = [m for m in BANGLA_WORD.finditer(q) if choices(m.group())]
    if not spans:
        return None
    m = rng.choice(spans)
    return q[: m.start()] + rng.choice(choices(m.group())) + q[m.end() :]


RULES: dict[str, Callable[[str, random.Random], str | None]] = {
    "ki": _ki,
    "honorific": _honorific,
    "year": _year,
    "mark": _mark,
}
"""The default rules. Each returns the rewritten question, or None when it does not apply."""
EXTRA_RULES: dict[str, Callable[[str, random.Random], str | None]] = {
    "order": _order,
    "register": _register,
    "synonym": _synonym,
}
"""The opt-in rules (module docstring), applied after the defaults when named."""
ALL_RULES = {**RULES, **EXTRA_RULES}


def paraphrase(
    question: str,
    rng: random.Random,
    rules: Iterable[str] = tuple(RULES),
    synonyms: Mapping[str, list[str]] | None = None,
) -> tuple[str, list[str]]:
    """``question`` rewritten by a random non-empty subset of the ``rules`` (names of
    :data:`ALL_RULES`; the defaults, :data:`RULES`, unless given) that apply.

    Args:
        rules: Rule names in the order they are applied (any iterable, read once; a set is
            taken in :data:`ALL_RULES`' order).
        synonyms: The ``synonym`` rule's table (headword -> synonyms); without it that rule
            never applies.

    Returns:
        ``(question, names of the rules applied)``; the question unchanged and ``[]`` when no
        rule applies.

    Raises:
        ValueError: A rule name that is not in :data:`ALL_RULES` (the message names it and
            the known rules).
        TypeError: ``question`` is not a string, ``rules`` is one string (or bytes),
            ``rng`` is not a :class:`random.Random`, or ``synonyms`` is not a mapping.
    """
    if isinstance(rules, (set, frozenset)):  # no order of its own: the table's
        rules = tuple(name for name in ALL_RULES if name in rules) + tuple(
            name for name in rules if name not in ALL_RULES
        )
    if (
        not isinstance(question, str)
        or isinstance(rules, (str, bytes))
        or not isinstance(rules, Iterable)
    ):
        raise TypeError("paraphrase takes a question string and a tuple of rule names")
    if not isinstance(rng, random.Random):
        raise TypeError(f"rng must be a random.Random, got {type(rng).__name__}")
    rules = tuple(rules)  # read once: an iterator is not used up by the check below
    if synonyms is not None and not isinstance(synonyms, Mapping):
        raise TypeError(
            f"synonyms must map a headword to its synonyms, got {type(synonyms).__name__}"
        )
    unknown = [name for name in rules if not isinstance(name, str) or name not in ALL_RULES]
    if unknown:
        raise ValueError(
            f"unknown paraphrase rule(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(ALL_RULES)}"
        )
    q = " ".join(question.split())
    chosen_rules = {
        name: partial(_synonym, table=synonyms) if name == "synonym" else ALL_RULES[name]
        for name in rules
    }
    applicable = [
        name for name, rule in chosen_rules.items() if rule(q, random.Random(0)) is not None
    ]
    if not applicable:
        return question, []
    chosen = [n for n in applicable if rng.random() < 0.6] or [rng.choice(applicable)]
    for name in chosen:
        q = chosen_rules[name](q, rng) or q
    if q == " ".join(question.split()):  # the rules applied changed nothing
        return question, []
    if question_type(q) != question_type(question):  # e.g. কী -> কি read as yes/no
        return question, []
    return q, chosen
