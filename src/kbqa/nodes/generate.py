"""generate: the reader reads the retrieved chunks and answers or abstains
(:func:`kbqa.answers.reading.generate_answer`: the prompt fitted to the context window, the
generation stopped once it is settled as an abstention)."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.nodes.common import answer_state, node, on_route
from kbqa.passages import chunk_passages, chunks_of
from kbqa.state import State

log = logging.getLogger("kbqa.generate")


@node("generate")
def generate(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer from ``retrieved``; sets ``raw_answer``, ``context_chunk_ids`` and, on the first
    reading, ``abstention_probability`` and ``abstention_threshold``
    (:class:`~kbqa.answers.reading.Reading`). With nothing
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
            **on_route("generate: no context"),
        }
    try:
        reading = answer_state(state, ctx, passages)
        raw, kept = reading.raw, reading.kept
    except ValueError:
        raise  # the question does not fit the context window: the caller's to fix
    except Exception as exc:  # the model failed at run time: the extractor answers instead
        log.warning(
            "LLM failed, answering with the pattern extractor: %s: %s", type(exc).__name__, exc
        )
        return {"llm_error": f"{type(exc).__name__}: {exc}"}
    update: dict[str, Any] = {
        "raw_answer": raw,
        "context_chunk_ids": [records[i]["chunk_id"] for i in kept],
    }
    if not state.get("retries"):  # the first reading's: what an abstention threshold decides
        update["abstention_probability"] = reading.abstention_probability
        update["abstention_threshold"] = reading.abstention_threshold
    return update
