"""Graph nodes, one module each, in pipeline order. Each is ``(state, runtime) -> dict`` and
returns only the keys it changes (plus its name in ``route`` and its wall time in ``timings``).

Nodes are thin: the answer logic they call is in :mod:`kbqa.answers`, retrieval in
:mod:`kbqa.retrieval`, the models in :mod:`kbqa.llm`; what several nodes share is in
:mod:`kbqa.nodes.common`. No node imports another node. The routers are in :mod:`kbqa.routes`.
"""

from kbqa.nodes.check_abstention import check_abstention
from kbqa.nodes.classify import classify
from kbqa.nodes.cross_check import cross_check
from kbqa.nodes.extract import extract
from kbqa.nodes.fallback import fallback
from kbqa.nodes.finalize import finalize
from kbqa.nodes.generate import generate
from kbqa.nodes.retrieve import retrieve
from kbqa.nodes.retry import retry
from kbqa.nodes.verify import verify
from kbqa.nodes.web_search import web_search

NODES = (
    classify,
    retrieve,
    generate,
    check_abstention,
    cross_check,
    retry,
    verify,
    fallback,
    web_search,
    extract,
    finalize,
)
"""Every node, in pipeline order; :func:`kbqa.graph.build_graph` adds each under its function's
name, so a new node is one module, one entry here and its edges in the graph."""

__all__ = [
    "NODES",
    "check_abstention",
    "classify",
    "cross_check",
    "extract",
    "fallback",
    "finalize",
    "generate",
    "retrieve",
    "retry",
    "verify",
    "web_search",
]
