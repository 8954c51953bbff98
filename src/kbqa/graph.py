"""The KBQA state machine (wiring only).

The drawing of every edge is the mermaid diagram in ``docs/graph.md`` (a test checks it
against this graph): classify -> retrieve -> generate -> check_abstention, then retry while
the reader abstains and retries remain, cross_check, verify, fallback and web_search as each is
switched on, and finalize; without an LLM, retrieve -> extract -> finalize.

The decisions are conditional edges, in :mod:`kbqa.routes`
(:func:`~kbqa.routes.route_after_retrieve`: no LLM -> extract;
:func:`~kbqa.routes.route_after_generate`: the LLM failed at run time -> extract;
:func:`~kbqa.routes.route_after_check`: an abstention goes to retry while retries remain, then
everything to ``cross_check`` (unless off), which may turn an answer into an abstention or the
reverse; :func:`~kbqa.routes.route_after_cross_check`, :func:`~kbqa.routes.route_unresolved`,
:func:`~kbqa.routes.route_after_fallback`: verify when on, then an abstention to fallback and
web search): retry runs at most ``max_retries`` times (counted in ``retries``), fallback and web
search at most once each, and each can be switched off in :class:`~kbqa.context.Context`. The
longest route is 18 node runs
(``max_retries`` = 3), below LangGraph's recursion limit of 25.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from kbqa.context import Context
from kbqa.nodes import NODES
from kbqa.routes import (
    route_after_check,
    route_after_cross_check,
    route_after_fallback,
    route_after_generate,
    route_after_retrieve,
    route_unresolved,
)
from kbqa.state import InputState, OutputState, State


def build_graph(
    checkpointer: Checkpointer = None,
) -> CompiledStateGraph[State, Context, InputState, OutputState]:
    """Build and compile the graph. Nothing heavy loads here: nodes load the index and the
    model on first use (once per process, see :mod:`kbqa.resources`).

    Args:
        checkpointer: Keeps each thread's state between questions (``kbqa chat`` passes a
            SQLite one), so ``history`` grows and follow-ups are rewritten; None: every
            ``invoke`` starts fresh.
    """
    builder = StateGraph(
        State, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    for node in NODES:
        builder.add_node(node.__name__, node)
    builder.add_edge(START, "classify")
    builder.add_edge("classify", "retrieve")
    builder.add_conditional_edges("retrieve", route_after_retrieve, ["generate", "extract"])
    builder.add_conditional_edges("generate", route_after_generate, ["check_abstention", "extract"])
    builder.add_conditional_edges(
        "check_abstention",
        route_after_check,
        ["retry", "cross_check", "verify", "fallback", "web_search", "finalize"],
    )
    builder.add_conditional_edges(
        "cross_check", route_after_cross_check, ["verify", "fallback", "web_search", "finalize"]
    )
    builder.add_edge("retry", "generate")
    builder.add_conditional_edges(
        "verify", route_unresolved, ["fallback", "web_search", "finalize"]
    )
    builder.add_conditional_edges("fallback", route_after_fallback, ["web_search", "finalize"])
    builder.add_edge("web_search", "finalize")
    builder.add_edge("extract", "finalize")
    builder.add_edge("finalize", END)
    return builder.compile(name="kbqa", checkpointer=checkpointer)


graph = build_graph()
"""The compiled graph; ``langgraph.json`` points here."""
