"""The words every stage shares: how a yes/no answer is written, which spellings of one are read
as one, the punctuation an answer's edges lose, and the Bangla question words. One list each,
so the reader, the clean-up, the grounding check, the cross-check, the extractor, the abstention
test, the follow-up rewrite, the metrics and the training data agree."""

from __future__ import annotations

YES = {"bn": "হ্যাঁ", "en": "Yes"}
"""The yes answer in each language (what kbqa writes)."""
NO = {"bn": "না", "en": "No"}
"""The no answer in each language."""

YES_NO_ANSWERS = {language: (YES[language], NO[language]) for language in YES}
"""``(yes, no)`` per language: the whole answers a constrained reader may give."""

YES_FORMS = ("হ্যাঁ", "হ্যা", "হাঁ", "yes")
"""Spellings read as yes (lower case; ``হ্যা`` without the chandrabindu, ``হাঁ`` the older
one)."""
NO_FORMS = ("না", "no")
"""Spellings read as no (lower case)."""
YES_NO_FORMS = frozenset(YES_FORMS + NO_FORMS)
"""Every spelling of a yes/no answer, lower case."""
YES_NO_PATTERN = "|".join(sorted(YES_NO_FORMS, key=len, reverse=True))
"""A regular-expression alternation of :data:`YES_NO_FORMS`, longest first."""


def yes_no_in(language: str, word: str) -> str | None:
    """``word`` (any spelling, any case) as a yes/no answer in ``language`` (``bn`` or ``en``),
    or None when it is not one.

    >>> yes_no_in("en", "হ্যা"), yes_no_in("bn", "No"), yes_no_in("bn", "নাম")
    ('Yes', 'না', None)
    """
    lowered = word.lower()
    table = YES if lowered in YES_FORMS else NO if lowered in NO_FORMS else None
    return None if table is None else table.get(language, table["en"])


EDGE = " \t\n।.,;:!?\"'“”‘’()[]{}"
"""Characters an answer's edges lose before it is compared."""

BN_QUESTION_WORDS = frozenset(
    {
        "কোন",
        "কোনটি",
        "কোনটা",
        "কবে",
        "কোথায়",
        "কোথা",
        "কোথাকার",
        "কে",
        "কী",
        "কি",
        "কত",
        "কতটি",
        "কতজন",
        "কয়টি",
        "কয়জন",
        "কেন",
        "কীভাবে",
        "কিভাবে",
        "কার",
        "কাকে",
        "কাদের",
        "কারা",
        "কেমন",
    }
)
"""Bangla question words; a question's subject is usually written before the first of them
(subject-object-verb order: ``আহসান মঞ্জিল কোন নদীর তীরে অবস্থিত?``)."""
