"""The graph's routers: which node runs next, decided from the state and the run's settings.

Each router reads the state and :class:`~kbqa.context.Context` only (no model, index or network
is touched here), and its return type lists the nodes it may choose (``graph.py`` wires them).
Retry runs at most ``max_retries`` times (counted in ``retries``); fallback and web search run at
most once each, which the graph's shape guarantees (nothing routes back to them).
"""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from kbqa.context import Context, context_of
from kbqa.state import State


def route_after_retrieve(state: State, runtime: Runtime[Context]) -> Literal["generate", "extract"]:
    """``extract`` (no LLM) when ``use_llm`` is off or the reader could not be loaded (the
    retrieve node records why in ``llm_error``: a missing package, a missing file); else
    ``generate``."""
    if not context_of(runtime).use_llm or state.get("llm_error"):
        return "extract"
    return "generate"


def route_after_generate(state: State) -> Literal["check_abstention", "extract"]:
    """``extract`` when the generator failed at run time (``llm_error``), else
    ``check_abstention``."""
    return "extract" if state.get("llm_error") else "check_abstention"


def route_after_check(
    state: State, runtime: Runtime[Context]
) -> Literal["retry", "cross_check", "verify", "fallback", "web_search", "finalize"]:
    """Retry with the wider pool while abstaining and retries remain; then the cross-check
    (unless off: it sees answers and settled abstentions); then verify (when on); else go where
    :func:`route_unresolved` sends an abstention."""
    ctx = context_of(runtime)
    if state.get("abstained") and state.get("retries", 0) < ctx.max_retries:
        return "retry"
    if ctx.cross_check != "off":
        return "cross_check"
    return route_after_cross_check(state, runtime)


def route_after_cross_check(
    state: State, runtime: Runtime[Context]
) -> Literal["verify", "fallback", "web_search", "finalize"]:
    """``verify`` when it is on; else :func:`route_unresolved`."""
    if context_of(runtime).verify:
        return "verify"
    return route_unresolved(state, runtime)


def route_unresolved(
    state: State, runtime: Runtime[Context]
) -> Literal["fallback", "web_search", "finalize"]:
    """An answer goes to finalize; an abstention to the precision fallback, else to web search,
    each only when switched on."""
    if state.get("abstained") and context_of(runtime).fallback:
        return "fallback"
    return route_after_fallback(state, runtime)


def route_after_fallback(
    state: State, runtime: Runtime[Context]
) -> Literal["web_search", "finalize"]:
    """An abstention goes to web search when it is on; everything else to finalize."""
    if state.get("abstained") and context_of(runtime).web_search != "off":
        return "web_search"
    return "finalize"
