"""Bookkeeping every node adds to its update: its name on the route and its wall time."""

from __future__ import annotations

import time
from typing import Any


def visited(node: str, started: float) -> dict[str, Any]:
    """``route`` and ``timings`` entries for a node that started at ``started`` (perf_counter)."""
    return {"route": [node], "timings": [{"node": node, "seconds": time.perf_counter() - started}]}
