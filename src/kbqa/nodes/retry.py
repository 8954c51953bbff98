"""retry: after an abstention, re-retrieve with the wider pool ``retry_k`` (HybridRAG-BN: k=10),
the passages the reader has not read yet first (``retry_unread_first``)."""

from __future__ import annotations

from collections.abc import Collection
from itertools import groupby
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.nodes.common import node
from kbqa.passages import retrieve_records
from kbqa.state import RetrievedRecord, State


def unread_first(records: list[RetrievedRecord], read: Collection[int]) -> list[RetrievedRecord]:
    """``records`` with the hits the reader has not read ranked above those it has, each group
    in its retrieval order, ranks renumbered from 1.

    A hit and its padding chunk share a rank and move together; they count as read when every
    chunk of the pair is in ``read``. The prompt budget drops the lowest ranks first
    (:func:`kbqa.prompts.budget.fit_passages`), so what was read is the first to go.
    """
    groups = [list(g) for _, g in groupby(records, key=lambda r: r["rank"])]
    unread = [g for g in groups if any(r["chunk_id"] not in read for r in g)]
    done = [g for g in groups if all(r["chunk_id"] in read for r in g)]
    return [{**r, "rank": rank} for rank, g in enumerate(unread + done, start=1) for r in g]


@node("retry")
def retry(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Increment ``retries`` and replace ``retrieved`` with the top ``retry_k`` chunks; with
    ``retry_unread_first`` (the default), the hits missing from ``context_chunk_ids`` (what the
    reader has just read) come first (:func:`unread_first`)."""
    ctx = context_of(runtime)
    records = retrieve_records(state["question"], ctx.retry_k, ctx)
    if ctx.retry_unread_first:
        records = unread_first(records, set(state.get("context_chunk_ids", [])))
    return {
        "retries": state.get("retries", 0) + 1,
        "retrieved": records,
    }
