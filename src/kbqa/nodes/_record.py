"""Bookkeeping every node adds to its update: its name on the route and its wall time."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from kbqa.context import Context

log = logging.getLogger("kbqa.nodes")


def context_of(runtime: Any) -> Context:
    """The run's :class:`~kbqa.context.Context`, or the defaults (``$KBQA_INDEX``,
    ``$KBQA_MODEL``...) when ``graph.invoke`` was called without ``context=``."""
    ctx = getattr(runtime, "context", None)
    return ctx if ctx is not None else _default_context()


@functools.cache
def _default_context() -> Context:
    return Context()


def visited(node: str, started: float, status: str | None = None) -> dict[str, Any]:
    """``route`` and ``timings`` entries for a node that started at ``started`` (perf_counter).

    Args:
        status: Appended to the route after the node's name, e.g. ``web: unavailable`` when the
            node could not do its work.
    """
    route = [node] if status is None else [node, status]
    return {"route": route, "timings": [{"node": node, "seconds": time.perf_counter() - started}]}


def fail_soft(
    node: str, status: str, error_field: str | None = None
) -> Callable[[Callable[..., dict[str, Any]]], Any]:
    """Decorate a post-processing node (verify, fallback, web_search) so that an error inside it
    (a model that fails to load or crashes, an index that cannot be read) keeps the answer so
    far: the node records ``status`` (e.g. ``verify: failed``) on the route, and the error in
    ``error_field`` when given, and the run goes on.
    """

    def wrap(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        @functools.wraps(fn)
        def run(state: Any, runtime: Any) -> dict[str, Any]:
            started = time.perf_counter()
            try:
                return fn(state, runtime)
            except Exception as exc:  # any failure of an optional stage is soft
                log.warning("%s failed, keeping the answer so far: %s: %s", node,
                            type(exc).__name__, exc)  # fmt: skip
                update = visited(node, started, status)
                if error_field:
                    update[error_field] = f"{type(exc).__name__}: {exc}"
                return update

        return run

    return wrap
