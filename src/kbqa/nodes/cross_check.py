"""cross_check: the pattern extractor reads the context the reader read; a reader answer that
lies outside the sentence the extractor found is replaced by the extractor's span.

The reader (the tuned Gemma 3 270M) decides *whether* the context holds an answer: its
abstentions are calibrated on held-out data (``docs/finetune.md``). Its spans are the weak part
on Bangla Wikipedia: on BanglaRQA validation (300 questions, seed 0) the pattern extractor
(:func:`~kbqa.nodes.extract.extract_answer`, the type-aware RAG seed's no-LLM reader) scores
answerable F1 0.43 on the same retrieval against the reader's 0.30, and wins on every question
type. The extractor finds the sentence that shares most words with the question and takes a
span of it; when the reader's answer is not in that sentence (and shares no word with the
span), the reader has usually read the wrong place. On English the reader reads better than the
extractor (XQuAD: the check lowered F1), so by default (``Context.cross_check = "auto"``) the
node changes Bangla answers only. Figures: ``docs/finetune.md`` ("Cross-check").

The node never turns an answer into an abstention or the reverse.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import context_of, visited
from kbqa.nodes.extract import Extraction, extract_answer
from kbqa.resources import retriever_for
from kbqa.retrieval.tokenizer import tokenize
from kbqa.state import State

AUTO_LANGUAGES = frozenset({"bn"})
"""Languages whose answers ``cross_check="auto"`` may change (measured to help there)."""


def agrees(answer: str, found: Extraction) -> bool:
    """The reader's ``answer`` agrees with the extractor's: the two spans share a word, or
    every word of ``answer`` is in the extractor's sentence (kbqa's tokenizer: lower-cased,
    Bangla and ASCII digits folded, so ``১৯৭১`` meets ``1971``)."""
    words = set(tokenize(answer))
    if words & set(tokenize(found.answer)):
        return True
    return bool(words) and words <= set(tokenize(found.sentence))


def applies(mode: str, language: str) -> bool:
    """Whether the cross-check may change an answer in ``language`` under ``mode``
    (``auto``: the languages of :data:`AUTO_LANGUAGES`; ``on``: all; ``off``: none)."""
    return mode == "on" or (mode == "auto" and language in AUTO_LANGUAGES)


def cross_check(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Compare ``answer`` with the extractor's span on ``context_chunk_ids``; when they do not
    :func:`agrees` (and where :func:`applies`), set ``answer``, ``raw_answer`` and
    ``answered_by="cross_check"``.
    Records a ``cross_check`` entry in ``stage_answers`` and ``cross_check: extractor`` (taken),
    ``cross_check: agrees``, ``cross_check: no span`` or ``cross_check: skipped (LANG)`` on the
    route."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    answer = state.get("answer", "")
    language = state.get("language", "bn")
    update: dict[str, Any] = {}
    if not applies(ctx.cross_check, language):
        status = f"cross_check: skipped ({language})"
    else:
        chunks = retriever_for(ctx).index.chunks
        found = extract_answer(
            state["question"],
            state.get("question_type", "other"),
            [(c, chunks[c].text) for c in state.get("context_chunk_ids", [])],
            language,
        )
        if found is None or not found.answer:
            status = "cross_check: no span"
        elif agrees(answer, found):
            status = "cross_check: agrees"
        else:
            status = "cross_check: extractor"
            answer = found.answer
            update = {"answer": answer, "raw_answer": answer, "answered_by": "cross_check"}
    return {
        **update,
        "stage_answers": [{"stage": "cross_check", "answer": answer, "abstained": False}],
        **visited("cross_check", started, status),
    }


def route_after_cross_check(
    state: State, runtime: Runtime[Context]
) -> Literal["verify", "finalize"]:
    """``verify`` when it is on, else ``finalize`` (a cross-checked answer is never an
    abstention, so fallback and web search have nothing to do)."""
    return "verify" if context_of(runtime).verify else "finalize"
