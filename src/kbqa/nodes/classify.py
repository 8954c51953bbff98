"""classify: question language (bn/en) and type by rules over Bangla and English question words.

Types follow the type-aware RAG seed: person, date, number, location, email, list, yes/no,
other.
"""

from __future__ import annotations

import time
import unicodedata
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import visited
from kbqa.state import RESET, State

PER_QUESTION: dict[str, Any] = {
    "answer": "",
    "abstained": True,
    "sources": [],
    "answered_by": "",
    "retrieved": [],
    "context_chunk_ids": [],
    "raw_answer": "",
    "verified_answer": "",
    "verify_changed": False,
    "fallback_answer": "",
    "web_query": "",
    "web_results": [],
    "web_error": "",
    "llm_error": "",
}
"""Output fields a node sets for one question; classify clears them."""

_BENGALI = regex.compile(r"[\u0980-\u09FF]")
_LETTER = regex.compile(r"\p{L}")

# Checked in order; the first rule that matches wins.
_RULES: list[tuple[str, regex.Pattern[str]]] = [
    ("email", regex.compile(r"(ই-?মেইল|e-?mail)", regex.I)),
    ("list", regex.compile(r"(কি\s+কি|কী\s+কী|কোন\s+কোন|কে\s+কে|কারা\s+কারা)")),
    (
        "date",
        regex.compile(
            r"(কবে|কখন|কত\s*সালে|কোন\s*সালে|কত\s*তারিখে|কোন\s*তারিখে|কোন\s*বছর|কত\s*খ্রিস্টাব্দে|"
            r"\bwhen\b|\bwhat\s+(year|date|day|month|century)\b|\bwhich\s+(year|date|day|month|century)\b)",
            regex.I,
        ),
    ),
    (
        "person",
        regex.compile(
            r"((^|\s)(কে|কারা|কাকে|কার|কাদের|কিনি)(\s|\?|$)|\bwho\b|\bwhom\b|\bwhose\b)", regex.I
        ),
    ),
    (
        "location",
        regex.compile(
            r"(কোথায়|কোথা\s*থেকে|কোন\s*(দেশে|শহরে|জেলায়|স্থানে|জায়গায়|নদীর)|\bwhere\b|"
            r"\bwhich\s+(country|city|state|place)\b)",
            regex.I,
        ),
    ),
    (
        "number",
        regex.compile(
            r"(কত|কয়টি|কয়টি|কতটি|কতজন|কয়জন|কয়জন|\bhow\s+(many|much|long|old|far)\b)", regex.I
        ),
    ),
    (
        "yes/no",
        regex.compile(
            r"((^|\s)কি(\s|\?|$)|(না|নাকি)\s*\?\s*$|^(is|are|was|were|do|does|did|can|could|has|have|had|"
            r"will|would|should)\b)",
            regex.I,
        ),
    ),
]


def detect_language(text: str) -> str:
    """``bn`` when at least 30% of the letters are Bengali script, else ``en``."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    return "bn" if len(_BENGALI.findall(text)) / len(letters) >= 0.3 else "en"


def question_type(question: str) -> str:
    """Rule-based question type; ``other`` when no rule matches."""
    q = unicodedata.normalize("NFC", question).strip()
    for name, pattern in _RULES:
        if pattern.search(q):
            return name
    return "other"


def classify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``language`` and ``question_type``.

    Raises:
        ValueError: The question is empty or only whitespace.
    """
    started = time.perf_counter()
    question = state.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question is empty: ask a non-empty question")
    done = visited("classify", started)
    return {
        # a new question: every per-question field starts over (a thread may hold an old run)
        **PER_QUESTION,
        "language": detect_language(question),
        "question_type": question_type(question),
        "retries": 0,
        "route": [RESET, *done["route"]],
        "timings": [RESET, *done["timings"]],
        "stage_answers": [RESET],
    }
