"""retry: after an abstention, re-retrieve with the wider pool ``retry_k`` (HybridRAG-BN: k=10)."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes.common import context_of, retrieve_records, visited
from kbqa.state import State


def retry(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Increment ``retries`` and replace ``retrieved`` with the top ``retry_k`` chunks."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    return {
        "retries": state.get("retries", 0) + 1,
        "retrieved": retrieve_records(state["question"], ctx.retry_k, ctx),
        **visited("retry", started),
    }
