"""Graph nodes, one module each, in pipeline order. Each is ``(state, runtime) -> dict`` and
returns only the keys it changes (plus its name in ``route`` and its wall time in ``timings``)."""

from kbqa.nodes.check_abstention import (
    check_abstention,
    is_abstention,
    route_after_check,
    route_unresolved,
)
from kbqa.nodes.classify import classify
from kbqa.nodes.cross_check import cross_check, route_after_cross_check
from kbqa.nodes.extract import extract, extract_answer
from kbqa.nodes.fallback import fallback
from kbqa.nodes.finalize import clean_answer, finalize, postprocess
from kbqa.nodes.generate import generate, route_after_generate
from kbqa.nodes.retrieve import retrieve, route_after_retrieve
from kbqa.nodes.retry import retry
from kbqa.nodes.verify import verify
from kbqa.nodes.web_search import web_search

__all__ = [
    "check_abstention",
    "classify",
    "clean_answer",
    "cross_check",
    "extract",
    "extract_answer",
    "fallback",
    "finalize",
    "generate",
    "is_abstention",
    "postprocess",
    "retrieve",
    "retry",
    "route_after_check",
    "route_after_cross_check",
    "route_after_generate",
    "route_after_retrieve",
    "route_unresolved",
    "verify",
    "web_search",
]
