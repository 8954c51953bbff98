"""cross_check: the pattern extractor reads the context the reader read, and overrules the reader
where the two disagree in ways measured to favour the extractor (the rules and their figures:
:mod:`kbqa.answers.cross_check`)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.cross_check import applies, decide, parse_rules
from kbqa.answers.extract import extract_answer
from kbqa.context import Context, context_of
from kbqa.nodes.common import node, on_route, stage_answer
from kbqa.passages import chunk_sources, chunks_of
from kbqa.state import State


@node("cross_check")
def cross_check(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Apply the cross-check's rules (:func:`~kbqa.answers.cross_check.decide`) to ``answer``
    (or to a settled abstention) with the extractor's span on ``context_chunk_ids``, where
    :func:`~kbqa.answers.cross_check.applies`.

    Sets ``question_coverage`` (:attr:`~kbqa.answers.extract.Extraction.coverage`; 0 without a
    sentence) and ``extracted_answer`` (the extractor's span, taken or not; "" without one).
    A changed answer sets ``answer``, ``raw_answer``, ``abstained`` and
    ``answered_by="cross_check"`` (and ``sources``, when an abstention is answered). Records a
    ``cross_check`` entry in ``stage_answers`` and one status on the route:
    ``cross_check: abstained``, ``cross_check: extractor``, ``cross_check: agrees``,
    ``cross_check: agrees, extractor's span``, ``cross_check: answered``, ``cross_check: date``,
    ``cross_check: kept abstention``, ``cross_check: no span``, ``cross_check: disagrees,
    kept`` (only when the ``extractor`` rule is left out) or ``cross_check: skipped (LANG)``."""
    ctx = context_of(runtime)
    answer = state.get("answer", "")
    abstained = bool(state.get("abstained"))
    language = state.get("language", "bn")
    update: dict[str, Any] = {}
    if not applies(ctx.cross_check, language):
        status = f"cross_check: skipped ({language})"
    else:
        chunks = chunks_of(ctx)
        context_ids = state.get("context_chunk_ids", [])
        found = extract_answer(
            state["question"],
            state.get("question_type", "other"),
            [(c, chunks[c].text) for c in context_ids],
            language,
        )
        answer, abstained, status = decide(
            answer,
            abstained,
            found,
            ctx.abstention_phrase,
            state.get("question_type", "other"),
            rules=parse_rules(ctx.cross_check_rules),
        )
        update = {
            "question_coverage": round(found.coverage, 4) if found else 0.0,
            "extracted_answer": found.answer if found else "",
        }
        if found is not None and state.get("abstained") and not abstained:  # rule 3
            retrieved = state.get("retrieved", [])
            update["sources"] = chunk_sources(chunks, retrieved, [found.chunk_id]) or (
                chunk_sources(chunks, retrieved, context_ids)
            )
        if answer != state.get("answer", ""):
            update |= {
                "answer": answer,
                "raw_answer": answer,
                "abstained": abstained,
                "answered_by": "cross_check",
            }
    return {
        **update,
        **stage_answer("cross_check", answer, abstained),
        **on_route(status),
    }
