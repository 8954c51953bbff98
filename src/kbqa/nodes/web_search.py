"""web_search: the last resort for a question neither index answers (HybridRAG-BN searched
DuckDuckGo for what was left).

The query is the question's key entities (:func:`kbqa.answers.web_query.web_query`). The
results are shown to the reader as quoted, untrusted data (``variant="web"``); whatever they say,
this node goes to ``finalize``. When the search fails (no network, timeout, rate limit), the
route records ``web: unavailable`` and the abstention stands.
"""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.snap import ground_answer
from kbqa.answers.web_query import web_query
from kbqa.context import Context, context_of
from kbqa.nodes.common import answer_state, fail_soft, judged, node, on_route, stage_answer
from kbqa.prompts import Passage
from kbqa.resources import web_search_for
from kbqa.state import Source, State
from kbqa.web_search import WebSearchError

log = logging.getLogger("kbqa.web")


@node("web_search")
@fail_soft("web_search", "web: failed", "web_error")
def web_search(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search, then answer from the snippets; set ``web_query`` and ``web_results``, and on an
    answer ``answer``, ``abstained=False``, ``answered_by="web_search"`` and URL ``sources``. An
    answer no snippet holds (:func:`~kbqa.answers.snap.ground_answer`) is not taken: the route
    records ``web: ungrounded`` and the abstention stands."""
    ctx = context_of(runtime)
    query = web_query(state["question"])
    try:
        engine = web_search_for(ctx)
        if engine is None:
            raise WebSearchError("web search is off")
        results = engine.search(query, ctx.web_max_results, ctx.web_timeout)
    except WebSearchError as exc:
        log.info("web search failed: %s", exc)
        return {"web_query": query, "web_results": [], "web_error": str(exc)} | on_route(
            "web: unavailable"
        )
    update: dict[str, Any] = {"web_query": query, "web_results": results}
    if not results:
        return update | on_route("web: no results")
    passages = [(i, Passage(r["title"], r["snippet"])) for i, r in enumerate(results, start=1)]
    raw, kept, *_ = answer_state(state, ctx, passages, "web")
    answer, abstained = judged(raw, state, ctx)
    status = None
    if not abstained and not ground_answer(answer, [r["snippet"] for r in results]):
        # the reader's answer must be in the snippets, as a verifier's correction in the context
        answer, abstained, status = ctx.abstention_phrase, True, "web: ungrounded"
    update |= stage_answer("web_search", answer, abstained)
    if not abstained:
        sources: list[Source] = [
            {
                "doc_id": results[i]["url"],
                "title": results[i]["title"],
                "url": results[i]["url"],
                "chunk_id": -1,
                "score": 0.0,
            }
            for i in kept
        ]
        update |= {
            "answer": answer,
            "abstained": False,
            "answered_by": "web_search",
            "raw_answer": raw,
            "sources": sources,
        }
    return update | on_route(status)
