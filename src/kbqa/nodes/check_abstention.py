"""check_abstention: did the LLM abstain? Routes to ``retry`` (bounded) or ``finalize``.

Besides the fixed phrase (HybridRAG-BN: ``Context-এ তথ্য নেই``), small models paraphrase it, so
close paraphrases in Bangla and English, empty output and the question echoed back also count.
"""

from __future__ import annotations

import time
import unicodedata
from typing import Any, Literal

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import visited
from kbqa.nodes.finalize import clean_answer
from kbqa.state import State

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
)
ABSTENTION_EXACT = ("unknown", "none", "n a", "na", "unanswerable", "not available", "অজানা")


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFC", text).lower()
    return " ".join(_NON_WORD.sub(" ", text).split())


def is_abstention(answer: str, phrase: str, question: str = "") -> bool:
    """True when ``answer`` is an abstention.

    Matches, after NFC, lower-casing and dropping punctuation: the empty answer, the fixed
    ``phrase`` anywhere in the answer, a known paraphrase (``তথ্য নেই``, ``I don't know``,
    ``not mentioned``...), a whole answer of ``unknown``/``none``, or the question echoed back.
    """
    norm = _norm(answer)
    if not norm:
        return True
    if _norm(phrase) in norm or norm in ABSTENTION_EXACT:
        return True
    if any(_norm(p) in norm for p in ABSTENTION_SUBSTRINGS):
        return True
    return bool(question) and norm == _norm(question)


def check_abstention(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``abstained`` from ``raw_answer`` and record the stage's answer in ``stage_answers``."""
    started = time.perf_counter()
    ctx = runtime.context
    raw = state.get("raw_answer", "")
    answer = clean_answer(raw, ctx.max_answer_chars)
    abstained = is_abstention(raw, ctx.abstention_phrase, state["question"]) or not answer
    stage = "retry" if state.get("retries", 0) > 0 else "generate"
    return {
        "abstained": abstained,
        "stage_answers": [
            {
                "stage": stage,
                "answer": ctx.abstention_phrase if abstained else answer,
                "abstained": abstained,
            }
        ],
        **visited("check_abstention", started),
    }


def route_after_check(state: State, runtime: Runtime[Context]) -> Literal["retry", "finalize"]:
    """Retry with the wider pool while abstaining and retries remain; else finalize."""
    if state.get("abstained") and state.get("retries", 0) < runtime.context.max_retries:
        return "retry"
    return "finalize"
