"""The KBQA state machine (wiring only).

::

    START -> classify -> retrieve -> generate -> check_abstention -+-> finalize -> END
                                        ^                          |
                                        +--------- retry <---------+  (abstained, retries < max)
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from kbqa.context import Context
from kbqa.nodes import (
    check_abstention,
    classify,
    finalize,
    generate,
    retrieve,
    retry,
    route_after_check,
)
from kbqa.state import InputState, OutputState, State


def build_graph() -> CompiledStateGraph[State, Context, InputState, OutputState]:
    """Build and compile the graph. Nothing heavy loads here: nodes load the index and the
    model on first use (once per process, see :mod:`kbqa.resources`)."""
    builder = StateGraph(
        State, context_schema=Context, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node("classify", classify)
    builder.add_node("retrieve", retrieve)
    builder.add_node("generate", generate)
    builder.add_node("check_abstention", check_abstention)
    builder.add_node("retry", retry)
    builder.add_node("finalize", finalize)
    builder.add_edge(START, "classify")
    builder.add_edge("classify", "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", "check_abstention")
    builder.add_conditional_edges("check_abstention", route_after_check, ["retry", "finalize"])
    builder.add_edge("retry", "generate")
    builder.add_edge("finalize", END)
    return builder.compile(name="kbqa")


graph = build_graph()
"""The compiled graph; ``langgraph.json`` points here."""
