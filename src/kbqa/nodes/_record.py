"""Bookkeeping every node adds to its update: its name on the route and its wall time."""

from __future__ import annotations

import time
from typing import Any


def visited(node: str, started: float, status: str | None = None) -> dict[str, Any]:
    """``route`` and ``timings`` entries for a node that started at ``started`` (perf_counter).

    Args:
        status: Appended to the route after the node's name, e.g. ``web: unavailable`` when the
            node could not do its work.
    """
    route = [node] if status is None else [node, status]
    return {"route": route, "timings": [{"node": node, "seconds": time.perf_counter() - started}]}
