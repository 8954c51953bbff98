"""generate: the reader reads the retrieved chunks and answers or abstains
(:func:`kbqa.answers.reading.generate_answer`: the prompt fitted to the context window, the
generation stopped once it is settled as an abstention)."""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from kbqa.answers.reading import choose_reading
from kbqa.context import Context, context_of
from kbqa.nodes.common import answer_state, judged, node, on_route
from kbqa.passages import chunk_passages, chunks_of, hit_windows
from kbqa.prompts import Passage
from kbqa.state import PassageReading, RetrievedRecord, State

log = logging.getLogger("kbqa.generate")

QUIET: RunnableConfig = {"tags": [TAG_NOSTREAM]}
"""The readings of ``--reading each``: kept out of LangGraph's ``messages`` stream, which would
show them one after another as if they were one answer."""


@node("generate")
def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer from ``retrieved``; sets ``raw_answer``, ``context_chunk_ids`` and, on the first
    reading, ``abstention_probability`` and ``abstention_threshold``
    (:class:`~kbqa.answers.reading.Reading`). Under ``--reading each`` each hit is read on
    its own, best first, until a reading is sure (:func:`_read_each`). With nothing
    retrieved the reader is not called: the answer is the abstention phrase and the route
    records ``generate: no context``.

    Raises:
        ValueError: The question alone does not fit the context window (the caller's to fix).
    """
    ctx = context_of(runtime)
    records = state.get("retrieved", [])
    passages = chunk_passages(chunks_of(ctx), records)
    if not passages:  # nothing retrieved: nothing to read, so nothing to ask the reader
        return {
            "raw_answer": ctx.abstention_phrase,
            "context_chunk_ids": [],
            "readings": [],
            **on_route("generate: no context"),
        }
    each = ctx.reading == "each" and not state.get("retries")  # the retry reads jointly
    windows = hit_windows(records) if each else []
    try:
        if len(windows) > 1:
            return _read_each(state, ctx, records, passages, windows)
        reading = answer_state(state, ctx, passages)
        raw, kept = reading.raw, reading.kept
    except ValueError:
        raise  # the question does not fit the context window: the caller's to fix
    except Exception as exc:  # the model failed at run time: the extractor answers instead
        log.warning(
            "LLM failed, answering with the pattern extractor: %s: %s", type(exc).__name__, exc
        )
        return {"llm_error": f"{type(exc).__name__}: {exc}", "readings": []}
    update: dict[str, Any] = {
        "raw_answer": raw,
        "context_chunk_ids": [records[i]["chunk_id"] for i in kept],
        "readings": [],  # a joint reading (the retry's, after --reading each) has none apart
    }
    if not state.get("retries"):  # the first reading's: what an abstention threshold decides
        update["abstention_probability"] = reading.abstention_probability
        update["abstention_threshold"] = reading.abstention_threshold
    return update


def _read_each(
    state: State,
    ctx: Context,
    records: list[RetrievedRecord],
    passages: list[tuple[int, Passage]],
    windows: list[list[int]],
) -> dict[str, Any]:
    """``--reading each``: one reading a hit (its window: the hit and its padding chunk), in
    retrieval order, until a reading is sure (``--stop-reading-below``), then the answer of
    :func:`~kbqa.answers.reading.choose_reading` over the readings made. The update is the chosen
    reading's (its text, the chunks it read, its abstention probability) and every reading
    under ``readings``."""
    done: list[PassageReading] = []
    readings = []
    for window in windows:
        if done and _sure(done[-1], ctx.stop_reading_below):
            break  # --stop-reading-below: the hits after a sure reading are not read
        reading = answer_state(state, ctx, [passages[i] for i in window], config=QUIET)
        answer, abstained = judged(reading.raw, state, ctx)
        readings.append(reading)
        done.append(
            {
                "chunk_ids": [records[window[i]]["chunk_id"] for i in reading.kept],
                # an abstention reads in the question's language, as the final answer does
                "answer": ctx.abstention_for(state.get("language")) if abstained else answer,
                "abstained": abstained,
                "abstention_probability": reading.abstention_probability,
            }
        )
    best = choose_reading([(r["abstained"], r["abstention_probability"]) for r in done])
    log.debug("read %d hits apart; hit %d answers", len(done), best + 1)
    return {  # the first reading (the retry reads jointly): what the threshold decides
        "raw_answer": readings[best].raw,
        "context_chunk_ids": done[best]["chunk_ids"],
        "readings": done,
        "abstention_probability": readings[best].abstention_probability,
        "abstention_threshold": readings[best].abstention_threshold,
    }


def _sure(reading: PassageReading, below: float) -> bool:
    """Did a reading answer with an abstention probability below ``below``
    (``--stop-reading-below``)?"""
    p = reading["abstention_probability"]
    return not reading["abstained"] and p is not None and p < below
