"""Graph nodes, one module each, in pipeline order. Each is ``(state, runtime) -> dict`` and
returns only the keys it changes (plus its name in ``route`` and its wall time in ``timings``)."""

from kbqa.nodes.check_abstention import check_abstention, is_abstention, route_after_check
from kbqa.nodes.classify import classify
from kbqa.nodes.finalize import clean_answer, finalize
from kbqa.nodes.generate import generate
from kbqa.nodes.retrieve import retrieve
from kbqa.nodes.retry import retry

__all__ = [
    "check_abstention",
    "classify",
    "clean_answer",
    "finalize",
    "generate",
    "is_abstention",
    "retrieve",
    "retry",
    "route_after_check",
]
