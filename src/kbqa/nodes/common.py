"""What the nodes share: the run's settings, the bookkeeping every node adds to its update (its
name on the route and its wall time), fail-soft optional stages, and the calls into retrieval
and the reader that several nodes make. Not a node: nodes import this module, never each other.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig

from kbqa.answers.abstention import judge
from kbqa.answers.reading import Reading, generate_answer
from kbqa.context import Context
from kbqa.prompts import Passage
from kbqa.resources import chat_model_for
from kbqa.state import RESET, State

log = logging.getLogger("kbqa.nodes")


def visited(node: str, started: float, status: str | None = None) -> dict[str, Any]:
    """``route`` and ``timings`` entries for a node that started at ``started`` (perf_counter).

    Args:
        status: Appended to the route after the node's name, e.g. ``web: unavailable`` when the
            node could not do its work.
    """
    route = [node] if status is None else [node, status]
    return {"route": route, "timings": [{"node": node, "seconds": time.perf_counter() - started}]}


def on_route(text: str | None) -> dict[str, Any]:
    """A node's status for the route (``generate: no context``), put after the node's name by
    :func:`node`; ``{}`` for None."""
    return {} if text is None else {"route": [text]}


def judged(raw: str, state: Any, ctx: Context) -> tuple[str, bool]:
    """A reading's text judged as every answering stage judges it
    (:func:`~kbqa.answers.abstention.judge`, with the run's abstention phrase and answer
    length): ``(answer, abstained)``."""
    return judge(raw, state["question"], ctx.abstention_phrase, ctx.max_answer_chars)


def stage_answer(stage: str, answer: str, abstained: bool) -> dict[str, Any]:
    """The ``stage_answers`` entry an answering stage adds (evaluations attribute the final
    answer and count what each stage changed from it)."""
    return {"stage_answers": [{"stage": stage, "answer": answer, "abstained": abstained}]}


NodeFn = TypeVar("NodeFn", bound=Callable[..., dict[str, Any]])


def node(name: str) -> Callable[[NodeFn], NodeFn]:
    """Decorate a node function: its update gains the route entry (``name``, then the
    :func:`on_route` it returned, if any) and its wall time under ``timings``. An update whose
    route starts with :data:`~kbqa.state.RESET` (``classify``: a new question starts the lists
    over) keeps it first."""

    def wrap(fn: NodeFn) -> NodeFn:
        @functools.wraps(fn)
        def run(state: Any, runtime: Any) -> dict[str, Any]:
            started = time.perf_counter()
            update = fn(state, runtime)
            route = list(update.get("route", []))
            reset = route[:1] if route[:1] == [RESET] else []
            done = visited(name, started, *route[len(reset) :])
            return {
                **update,
                "route": [*reset, *done["route"]],
                "timings": [*reset, *done["timings"]],
            }

        return cast(NodeFn, run)

    return wrap


def fail_soft(node: str, failed: str, error_field: str | None = None) -> Callable[[NodeFn], NodeFn]:
    """Decorate a post-processing node (verify, fallback, web_search; inside :func:`node`) so
    that an error inside it (a model that fails to load or crashes, an index that cannot be
    read) keeps the answer so far: the node records ``failed`` (e.g. ``verify: failed``) on
    the route, and the error in ``error_field`` when given, and the run goes on.
    """

    def wrap(fn: NodeFn) -> NodeFn:
        @functools.wraps(fn)
        def run(state: Any, runtime: Any) -> dict[str, Any]:
            try:
                return fn(state, runtime)
            except Exception as exc:  # any failure of an optional stage is soft
                log.warning(
                    "%s failed, keeping the answer so far: %s: %s", node, type(exc).__name__, exc
                )
                update = on_route(failed)
                if error_field:
                    update[error_field] = f"{type(exc).__name__}: {exc}"
                return update

        return cast(NodeFn, run)

    return wrap


def answer_state(
    state: State,
    ctx: Context,
    passages: list[tuple[int, Passage]],
    variant: str = "coverage",
    config: RunnableConfig | None = None,
) -> Reading:
    """:func:`~kbqa.answers.reading.generate_answer` with the run's reader for the state's
    language (``--model-en`` for English when set) and the state's question, type and
    language; ``config`` goes to the model call."""
    return generate_answer(
        chat_model_for(ctx, state.get("language")),
        ctx,
        state["question"],
        passages,
        question_type=state.get("question_type", "other"),
        language=state.get("language", "bn"),
        variant=variant,
        config=config,
    )
