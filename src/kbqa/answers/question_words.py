"""Bangla question words, shared by the question typer, the yes/no classifier and the
extractor (a module of its own so that none of them imports another for a word list)."""

from __future__ import annotations

from kbqa.text import normalize_text

QUESTION_WORDS_BN = frozenset(
    normalize_text(word)
    for word in (
        "কে",
        "কী",
        "কি",
        "কোন",
        "কোনটি",
        "কোনগুলো",
        "কোনো",
        "কোথায়",
        "কোথা",
        "কোথাকার",
        "কবে",
        "কখন",
        "কত",
        "কতটা",
        "কতো",
        "কতজন",
        "কতটি",
        "কততম",
        "কেন",
        "কিভাবে",
        "কীভাবে",
        "কার",
        "কাকে",
        "কাদের",
        "কারা",
        "কয়",
        "কয়টি",
        "কিসের",
        "কীসের",
        "কিসে",
        "কীসে",
        "কেমন",
        "কিরূপ",
        "কীরূপ",
    )
)
"""Bangla question words, as whole tokens after :func:`~kbqa.text.normalize_text` (the
extractor finds the question word's place with them)."""
