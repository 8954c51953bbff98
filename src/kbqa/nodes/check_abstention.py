"""check_abstention: did the LLM abstain? Routes to ``retry`` (bounded), then ``verify``, and
for an abstention to ``fallback`` and ``web_search`` (each when switched on), else ``finalize``.

Besides the fixed phrase (HybridRAG-BN: ``Context-এ তথ্য নেই``), small models paraphrase it, so
close paraphrases in Bangla and English, empty output and the question echoed back also count.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.corpus.chunking import Chunk
from kbqa.nodes._record import context_of, visited
from kbqa.nodes.classify import question_type
from kbqa.nodes.finalize import clean_answer
from kbqa.resources import retriever_for
from kbqa.state import RetrievedRecord, Source, State
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
_YES_NO_ANSWER = regex.compile(r"^\s*(no|yes|না|হ্যাঁ|হ্যা)\s*[,.।;:!]", regex.I)
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


def is_abstention(answer: str, phrase: str, question: str = "") -> bool:
    """True when ``answer`` is an abstention.

    Matches, after expanding English contractions, NFC, lower-casing and dropping
    punctuation: the empty answer, the fixed ``phrase`` anywhere in the answer or cut off
    (a prefix of at least :data:`MIN_PHRASE_PREFIX` characters), a known paraphrase
    (``তথ্য নেই``, ``জানা যায়নি``, ``I don't know``, ``not mentioned``...) unless the answer
    opens with yes/no and a comma (``No, it does not contain gluten``), a whole answer of
    ``unknown``/``none``, or the question echoed back, whole or mostly (:func:`is_echo`).
    """
    norm = _norm(answer)
    if not norm:
        return True
    fixed = _norm(phrase)  # empty for an empty phrase: then only the other rules apply
    if (fixed and fixed in norm) or norm in ABSTENTION_EXACT:
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
    line so far (:func:`~kbqa.nodes.finalize.clean_answer`) already holds the fixed ``phrase``
    or a known paraphrase (``ABSTENTION_SUBSTRINGS``) and does not open with yes/no and a comma.
    Lines only grow, so :func:`judge` reaches the same verdict on the full output.
    """
    line = clean_answer(partial, max_chars)
    norm = _norm(line)
    fixed = _norm(phrase)
    if not norm:
        return False
    if fixed and fixed in norm:
        return True
    return not _YES_NO_ANSWER.match(line) and _has_paraphrase(norm)


def judge(raw: str, ctx: Context, question: str) -> tuple[str, bool]:
    """``(answer, abstained)`` for a model's raw output: the cleaned short answer, or the
    abstention phrase when :func:`is_abstention` says so or nothing is left after cleaning."""
    answer = clean_answer(raw, ctx.max_answer_chars)
    # judged on the answer line only: "ঢাকা\n(not mentioned elsewhere)" is an answer
    abstained = not answer or is_abstention(answer, ctx.abstention_phrase, question)
    return (ctx.abstention_phrase if abstained else answer), abstained


def chunk_sources(
    chunks: Sequence[Chunk], records: Sequence[RetrievedRecord], given: Iterable[int]
) -> list[Source]:
    """Sources for an answer: the retrieved hits (not padding) whose chunks the model read."""
    shown = set(given)
    return [
        {
            "doc_id": chunks[r["chunk_id"]].doc_id,
            "title": chunks[r["chunk_id"]].title,
            "url": chunks[r["chunk_id"]].url,
            "chunk_id": r["chunk_id"],
            "score": r["score"],
        }
        for r in records
        if r["chunk_id"] in shown and not r["is_padding"]
    ]


def check_abstention(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Judge ``raw_answer``: set ``answer``, ``abstained``, ``answered_by`` and ``sources``, and
    record the stage's answer in ``stage_answers``."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    answer, abstained = judge(state.get("raw_answer", ""), ctx, state["question"])
    stage = "retry" if state.get("retries", 0) > 0 else "generate"
    chunks = retriever_for(ctx).index.chunks
    return {
        "answer": answer,
        "abstained": abstained,
        "answered_by": stage,
        "sources": chunk_sources(
            chunks, state.get("retrieved", []), state.get("context_chunk_ids", [])
        ),
        "stage_answers": [{"stage": stage, "answer": answer, "abstained": abstained}],
        **visited("check_abstention", started),
    }


def route_after_check(
    state: State, runtime: Runtime[Context]
) -> Literal["retry", "cross_check", "verify", "fallback", "web_search", "finalize"]:
    """Retry with the wider pool while abstaining and retries remain; then the cross-check
    (unless off: it sees answers and settled abstentions); then verify (when on); else go where
    :func:`route_unresolved` sends an abstention."""
    ctx = context_of(runtime)
    if state.get("abstained") and state.get("retries", 0) < ctx.max_retries:
        return "retry"
    if ctx.cross_check != "off":
        return "cross_check"
    if ctx.verify:
        return "verify"
    return route_unresolved(state, runtime)


def route_unresolved(
    state: State, runtime: Runtime[Context]
) -> Literal["fallback", "web_search", "finalize"]:
    """An answer goes to finalize; an abstention to the precision fallback, then web search,
    each only once and only when switched on."""
    ctx = context_of(runtime)
    if not state.get("abstained"):
        return "finalize"
    route = state.get("route", [])
    if ctx.fallback and "fallback" not in route:
        return "fallback"
    if ctx.web_search != "off" and "web_search" not in route:
        return "web_search"
    return "finalize"
