"""web_search: the last resort for a question neither index answers (HybridRAG-BN searched
DuckDuckGo for what was left).

The query is the question's key entities, from a small rule-based extractor: quoted phrases,
runs of capitalised English words, numbers, and the Bangla/English content words left after
question words and particles are dropped. The results are shown to the reader as quoted,
untrusted data (``variant="web"``); whatever they say, this node goes to ``finalize``. When the
search fails (no network, timeout, rate limit), the route records ``web: unavailable`` and the
abstention stands.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import context_of, fail_soft, visited
from kbqa.nodes.check_abstention import judge
from kbqa.nodes.extract import STOPWORDS
from kbqa.nodes.generate import answer_state
from kbqa.prompts import Passage
from kbqa.retrieval.web import WebSearchError, load_web_search
from kbqa.state import Source, State
from kbqa.text import normalize_text

MAX_QUERY_WORDS = 8
log = logging.getLogger("kbqa.web")

_QUOTED = regex.compile(r"[\"“«‘']([^\"”»’']{2,80})[\"”»’']")
_CAPITALISED = regex.compile(
    r"\b[A-Z][\p{L}\p{M}'’\-]*(?:\s+(?:(?:of|de|the|and|in|for|on)\s+)*[A-Z][\p{L}\p{M}'’\-]*)*"
)
"""A run of capitalised words, with connectors inside it (``Nobel Prize in Physics``)."""
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}]+(?:[.\-'][\p{L}\p{M}\p{N}]+)*")
BN_PARTICLES = (  # not a bare র or ে: শহর, পুরস্কার end in them
    "টির",
    "টিকে",
    "টি",
    "টা",
    "গুলো",
    "গুলি",
    "দের",
    "কে",
    "রা",
    "এর",
    "য়ের",
    "ের",
)
"""Bangla case endings and classifiers stripped from a query word (longest first)."""
EXTRA_STOPWORDS = frozenset(
    [
        "কোনটি",
        "কারা",
        "কাকে",
        "কার",
        "কাদের",
        "কয়জন",
        "কতজন",
        "নাম",
        "কী",
        "কি",
        "হলো",
        "হল",
        "হয়েছে",
        "হয়েছিলেন",
        "করা",
        "করেছিলেন",
        "তিনি",
        "তার",
        "তাঁর",
        "তাদের",
        "সেই",
        "এটি",
        "এটা",
        "যে",
        "সে",
        "আছে",
        "ছিলো",
        "there",
        "their",
        "his",
        "her",
        "its",
        "this",
        "that",
        "these",
        "those",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
    ]
)


def key_entities(question: str) -> list[str]:
    """Key noun phrases of a question, for a search query, most specific first.

    Quoted phrases, then runs of capitalised English words (``Nobel Prize in Physics``), then
    the remaining content words (Bangla words lose a trailing case ending such as ``-এর``).
    Question words, particles and duplicates are dropped; zero-width characters inside words
    are removed first (:func:`kbqa.text.normalize_text`).
    """
    question = normalize_text(question)
    found: list[str] = []
    seen: set[str] = set()

    def add(phrase: str) -> None:
        phrase = " ".join(phrase.split()).strip(" ?.,!।")
        key = phrase.lower()
        if phrase and key not in seen and key not in STOPWORDS | EXTRA_STOPWORDS:
            seen.add(key)
            seen.update(key.split())
            found.append(phrase)

    for m in _QUOTED.finditer(question):
        add(m.group(1))
    for m in _CAPITALISED.finditer(question):
        words = m.group(0).split()
        while words and words[0].lower() in STOPWORDS | EXTRA_STOPWORDS:
            words = words[1:]
        if words:
            add(" ".join(words))
    for m in _WORD.finditer(question):
        word = m.group(0)
        if word.lower() in seen or word.lower() in STOPWORDS | EXTRA_STOPWORDS:
            continue
        if regex.search(r"\p{Bengali}", word):
            for ending in BN_PARTICLES:
                if word.endswith(ending) and len(word) - len(ending) >= 2:
                    word = word[: -len(ending)]
                    break
        add(word)
    return found


def web_query(question: str) -> str:
    """The search query: :func:`key_entities` joined, at most :data:`MAX_QUERY_WORDS` words."""
    words: list[str] = []
    for phrase in key_entities(question):
        words.extend(phrase.split())
    return " ".join(words[:MAX_QUERY_WORDS]) or normalize_text(question).strip()


@fail_soft("web_search", "web: failed", "web_error")
def web_search(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Search, then answer from the snippets; set ``web_query`` and ``web_results``, and on an
    answer ``answer``, ``abstained=False``, ``answered_by="web_search"`` and URL ``sources``."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    query = web_query(state["question"])
    try:
        engine = load_web_search(ctx.web_search)
        if engine is None:
            raise WebSearchError("web search is off")
        results = engine.search(query, ctx.web_max_results, ctx.web_timeout)
    except WebSearchError as exc:
        log.info("web search failed: %s", exc)
        return {"web_query": query, "web_results": [], "web_error": str(exc)} | visited(
            "web_search", started, "web: unavailable"
        )
    rows = [{"title": r.title, "url": r.url, "snippet": r.snippet} for r in results]
    update: dict[str, Any] = {"web_query": query, "web_results": rows}
    if not results:
        return update | visited("web_search", started, "web: no results")
    passages = [(i, Passage(r.title, r.snippet)) for i, r in enumerate(results, start=1)]
    raw, kept, _ = answer_state(state, ctx, passages, "web")
    answer, abstained = judge(raw, ctx, state["question"])
    update["stage_answers"] = [{"stage": "web_search", "answer": answer, "abstained": abstained}]
    if not abstained:
        sources: list[Source] = [
            {"doc_id": results[i].url, "title": results[i].title, "url": results[i].url,
             "chunk_id": -1, "score": 0.0}
            for i in kept
        ]  # fmt: skip
        update |= {
            "answer": answer,
            "abstained": False,
            "answered_by": "web_search",
            "raw_answer": raw,
            "sources": sources,
        }
    return update | visited("web_search", started)
