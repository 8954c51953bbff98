"""finalize: clean the answer into a short span and attach its sources."""

from __future__ import annotations

import time
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import visited
from kbqa.resources import retriever_for
from kbqa.state import Source, State

_LABEL = regex.compile(r"^\s*((উত্তর|উত্তরঃ|answer|a|ans)\s*[:ঃ\-–]|\[\s*\d+\s*\]\s*:?)\s*", regex.I)
"""A leading answer label or a passage citation marker such as ``[3]`` (the prompt numbers
passages and small models copy the number)."""
_QUOTES = "\"'“”‘’«»`*_[](){}"
_TRAILING = " \t।.,;:!|-–—"


def clean_answer(raw: str, max_chars: int = 200) -> str:
    """Strip what small models wrap around a short answer.

    Keeps the first non-empty line, removes ``উত্তর:`` / ``Answer:`` labels, surrounding quotes,
    brackets and markdown emphasis, and a trailing danda or full stop; folds spaces; cuts to
    ``max_chars`` at a word boundary.
    """
    line = next((ln for ln in raw.splitlines() if ln.strip()), "")
    for _ in range(3):
        line = _LABEL.sub("", line).strip().strip(_QUOTES).strip().rstrip(_TRAILING)
    line = " ".join(line.split())
    if len(line) > max_chars:
        cut = line.rfind(" ", 0, max_chars)
        line = line[: cut if cut > max_chars // 2 else max_chars]
    return line


def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``answer``, ``abstained``, ``sources`` and ``answered_by``."""
    started = time.perf_counter()
    ctx = runtime.context
    answer = clean_answer(state.get("raw_answer", ""), ctx.max_answer_chars)
    abstained = bool(state.get("abstained")) or not answer
    chunks = retriever_for(ctx).index.chunks
    given = set(state.get("context_chunk_ids", []))
    sources: list[Source] = [
        {
            "doc_id": chunks[r["chunk_id"]].doc_id,
            "title": chunks[r["chunk_id"]].title,
            "url": chunks[r["chunk_id"]].url,
            "chunk_id": r["chunk_id"],
            "score": r["score"],
        }
        for r in state.get("retrieved", [])
        if r["chunk_id"] in given and not r["is_padding"]
    ]
    return {
        "answer": ctx.abstention_phrase if abstained else answer,
        "abstained": abstained,
        "sources": sources,
        "answered_by": "retry" if state.get("retries", 0) > 0 else "generate",
        **visited("finalize", started),
    }
