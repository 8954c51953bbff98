"""Bangla questions asked in another form, by rule, so the reader learns the question and not one
annotation style's phrasing.

Haque 2020's questions are written one way: standard spelling (``কী`` for *what*), honorific
verbs (``করেন``, ``ছিলেন``), ``কত সালে`` for a year. People write ``কি`` for *what* (the common
spelling), plain verbs (``করে``, ``ছিল``), ``কবে`` or ``কোন সালে``, and a space before ``?``.
Each rule below keeps the question's meaning; :func:`paraphrase` applies a random subset of those
that fit, and keeps the rewrite only when the question typer gives it the same type.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import regex

from kbqa.answers.language import question_type

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


RULES: dict[str, Callable[[str, random.Random], str | None]] = {
    "ki": _ki,
    "honorific": _honorific,
    "year": _year,
    "mark": _mark,
}
"""Each rule returns the rewritten question, or None when it does not apply."""


def paraphrase(question: str, rng: random.Random) -> tuple[str, list[str]]:
    """``question`` rewritten by a random non-empty subset of the :data:`RULES` that apply.

    Returns:
        ``(question, names of the rules applied)``; the question unchanged and ``[]`` when no
        rule applies.
    """
    q = " ".join(question.split())
    applicable = [name for name, rule in RULES.items() if rule(q, random.Random(0)) is not None]
    if not applicable:
        return question, []
    chosen = [n for n in applicable if rng.random() < 0.6] or [rng.choice(applicable)]
    for name in chosen:
        q = RULES[name](q, rng) or q
    if question_type(q) != question_type(question):  # e.g. কী -> কি read as yes/no
        return question, []
    return q, chosen
