"""fallback: answer an abstention again from the precision index (HybridRAG-BN Approach 1).

HybridRAG-BN keeps a second pipeline, built on the precision knowledge base (aggressive
boilerplate removal, ~1000-character chunks), and asks it when the primary one abstains. Here
that is the ``precision`` sub-index of a ``kbqa index --strategy both`` directory, read with the
stricter precision prompt, which may abstain too. Its answer replaces the abstention only when
it is not one. An index without a precision part records ``fallback: unavailable``.
"""

from __future__ import annotations

import functools
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.nodes.common import answer_state, fail_soft, judged, node, on_route, stage_answer
from kbqa.passages import chunk_passages, chunk_sources, chunks_of, retrieve_records
from kbqa.resources import has_strategy_at
from kbqa.state import State

PRECISION = "precision"


@functools.cache
def _has_precision(index_dir: str) -> bool:
    """Read once per index directory, as the retrievers are (:mod:`kbqa.resources`)."""
    return has_strategy_at(index_dir, PRECISION)


@node("fallback")
@fail_soft("fallback", "fallback: failed")
def fallback(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Retrieve ``k`` chunks from the precision index and answer with the precision prompt;
    set ``fallback_answer``, and ``context_chunk_ids`` (precision chunk ids) with
    ``context_index="precision"``; on an answer, ``answer``, ``abstained=False``,
    ``answered_by="fallback"`` and ``sources``."""
    ctx = context_of(runtime)
    if ctx.retriever is not None or not _has_precision(ctx.index_dir):
        # a retriever handed in has no precision sub-index of its own
        return on_route("fallback: unavailable")
    chunks = chunks_of(ctx, PRECISION)  # a broken one: "fallback: failed"
    records = retrieve_records(state["question"], ctx.k, ctx, PRECISION)
    raw, kept, *_ = answer_state(state, ctx, chunk_passages(chunks, records), PRECISION)
    answer, abstained = judged(raw, state, ctx)
    given = [records[i]["chunk_id"] for i in kept]
    update: dict[str, Any] = {
        "fallback_answer": answer,
        # what the reader read last: the precision sub-index's chunks
        "context_chunk_ids": given,
        "context_index": PRECISION,
        **stage_answer("fallback", answer, abstained),
    }
    if not abstained:
        update |= {
            "answer": answer,
            "abstained": False,
            "answered_by": "fallback",
            "raw_answer": raw,
            "sources": chunk_sources(chunks, records, given),
        }
    return update
