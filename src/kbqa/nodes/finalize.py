"""finalize: clean the answer into a short span and attach its sources."""

from __future__ import annotations

import time
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.llm.grounding import snap_to_span
from kbqa.nodes._record import context_of, visited
from kbqa.resources import retriever_for
from kbqa.state import State

_LABEL = regex.compile(
    r"^\s*((উত্তর|উত্তরঃ|answer)\s*[:ঃ\-–]|(a|ans)\s*:|\[\s*\d+\s*\]\s*:?"
    r"|(\(\s*[\p{N}\p{L}]{1,2}\s*\)\s*)+)\s*",
    regex.I,
)
"""A leading answer label, a passage citation marker such as ``[3]`` (the prompt numbers
passages and small models copy the number) or list markers (``(১)``, ``(ক)``, ``(1) (2)``:
Gemma 3 270M starts lists that way)."""
_CITATION = regex.compile(r"\s*\[\s*\d+\s*\]\s*:?\s*")
"""A passage number inside the answer (``Dhaka [2]``)."""
_BARE_LABELS = frozenset({"উত্তর", "answer", "ans"})
_QUOTES = "\"'“”‘’«»`*_[](){}"
_TRAILING = " \t।.,;:!|-–—"


def clean_answer(raw: str, max_chars: int = 200) -> str:
    """Strip what small models wrap around a short answer.

    Keeps the first line that is not empty once a label is removed (``Answer:\nDhaka`` ->
    ``Dhaka``), removes ``উত্তর:`` / ``Answer:`` labels, list markers and passage numbers
    (``[2]``), surrounding quotes,
    brackets and markdown emphasis, and a trailing danda or full stop; folds spaces; cuts to
    ``max_chars`` at a word boundary.
    """
    line = ""
    for candidate in raw.splitlines():  # the first line with something left after a label
        candidate = _CITATION.sub(" ", candidate)
        for _ in range(3):
            candidate = _LABEL.sub("", candidate).strip().strip(_QUOTES).strip().rstrip(_TRAILING)
        if candidate and candidate.lower().rstrip("ঃ:") not in _BARE_LABELS:
            line = candidate
            break
    line = " ".join(_CITATION.sub(" ", line).split())
    if len(line) > max_chars:
        cut = line.rfind(" ", 0, max_chars)
        line = line[: cut if cut > max_chars // 2 else max_chars]
    return line


_EXPLANATION = regex.compile(
    r"(?:,\s*)?(?:\bbecause\b|\bsince\b|\bas stated\b|\baccording to\b|\bwhich is\b|"
    r"কারণ|যেহেতু|অনুযায়ী|\(.*)\s.*$",
    regex.I,
)
_YES_NO = regex.compile(r"^(হ্যাঁ|হ্যা|না|yes|no)\b[\s,.;:!।-]", regex.I)
_LEADING_PREPOSITION = regex.compile(r"^(?:on|in|at|since|by|from|around|about)\s+(?=\S)", regex.I)


_WORD_CHAR = regex.compile(r"[\p{L}\p{M}\p{N}]")
_DEGREE = regex.compile(
    r"^(?:ph\.?\s?d|d\.?\s?phil|m\.?\s?sc?|b\.?\s?sc?|m\.?\s?a|b\.?\s?a|m\.?\s?eng|b\.?\s?eng|"
    r"mba|m\.?\s?phil|ll\.?\s?[bm]|m\.?\s?d)\.?(?:\s|$)",
    regex.I,
)
"""Degree abbreviations (``PhD``, ``M.S.``, ``BSc``...) at the start of an answer."""
_ASCII_TO_BENGALI = str.maketrans("0123456789", "০১২৩৪৫৬৭৮৯")
_BENGALI_TO_ASCII = str.maketrans("০১২৩৪৫৬৭৮৯", "0123456789")
MAX_SNAP_CHARS = 60
"""Longer answers are left as the model wrote them."""


def _char_pattern(ch: str) -> str:
    if ch.isdigit():
        ascii_digit = ch.translate(_BENGALI_TO_ASCII)
        return f"[{ascii_digit}{ascii_digit.translate(_ASCII_TO_BENGALI)}]"
    return str(regex.escape(ch))


def snap_to_context(answer: str, question_type: str, passages: list[str]) -> str:
    """The context's own spelling of a date, number, code or degree the model re-wrote.

    Applies to answers with a digit, to ``date``/``number`` questions and to degree
    abbreviations (type-aware RAG seed: normalise dates, degrees and course codes per type).
    When the answer is not verbatim in a passage but is there up to case, spacing and
    ``.``/``-``/``/``/``,`` separators, or with Bangla instead of ASCII digits (or the reverse),
    the passage's span is returned: ``cs161`` -> ``CS 161``, ``PhD`` -> ``Ph.D``,
    ``March 26 1971`` -> ``March 26, 1971``, ``1971`` -> ``১৯৭১``. Otherwise ``answer`` is returned
    unchanged.

    Args:
        answer: A cleaned short answer.
        question_type: The classify node's type.
        passages: The texts the answer was read from (chunks or web snippets).
    """
    if not answer or len(answer) > MAX_SNAP_CHARS or not passages:
        return answer
    if not (
        question_type in ("date", "number")
        or any(ch.isdigit() for ch in answer)
        or _DEGREE.match(answer)
    ):
        return answer
    if any(answer in text for text in passages):
        return answer
    parts: list[str] = []
    gap = answer_digit = False
    for ch in answer:
        if not _WORD_CHAR.match(ch):
            gap = True
            continue
        if parts:  # between two word characters: the answer's gap, or an optional separator
            # (never inside a digit run: 35 must not match "3-5")
            digits = ch.isdigit() and answer_digit
            parts.append(r"[\s.,\-/]{1,3}" if gap else "" if digits else r"[\s.\-]?")
        parts.append(_char_pattern(ch))
        gap = False
        answer_digit = ch.isdigit()
    if len(parts) < 3:  # fewer than two word characters
        return answer
    pattern = regex.compile(
        r"(?<![\p{L}\p{M}\p{N}])" + "".join(parts) + r"(?![\p{L}\p{M}\p{N}])", regex.I
    )
    for text in passages:
        if m := pattern.search(text):
            return str(m.group(0))
    return answer


_YES_NO_IN = {
    "bn": {"হ্যাঁ": "হ্যাঁ", "হ্যা": "হ্যাঁ", "yes": "হ্যাঁ", "না": "না", "no": "না"},
    "en": {"হ্যাঁ": "Yes", "হ্যা": "Yes", "yes": "Yes", "না": "No", "no": "No"},
}
"""A yes/no word in the question's language (Gemma answers a Bangla question ``yes``)."""


def postprocess(
    answer: str, question_type: str, titles: list[str], language: str | None = None
) -> str:
    """Type-aware clean-up of a short answer (type-aware RAG seed's strict post-processing).

    - a leading passage title the model copied from the prompt (``Jacksonville,_Florida: ...``)
      is dropped;
    - an explanation after the answer (``because ...``, ``কারণ ...``, a parenthesis) is cut;
    - yes/no answers are reduced to ``হ্যাঁ``/``না``/``Yes``/``No``, and a bare yes/no word
      is given in the question's ``language`` (``bn``/``en``; ``yes`` -> ``হ্যাঁ``) when known;
    - date and location answers lose a leading English preposition (``in 1903`` -> ``1903``).
    """
    for title in titles:
        for form in {title, title.replace(" ", "_")}:
            if form and answer.startswith(f"{form}:") and len(answer) > len(form) + 2:
                answer = answer[len(form) + 1 :].strip()
    cut = _EXPLANATION.sub("", answer).strip(" ,;:")
    answer = cut or answer
    if question_type == "yes/no" and (m := _YES_NO.match(answer + " ")):
        word = m.group(1)
        answer = {"হ্যা": "হ্যাঁ", "yes": "Yes", "no": "No"}.get(word.lower(), word)
    if language in _YES_NO_IN and answer.lower() in _YES_NO_IN[language]:
        answer = _YES_NO_IN[language][answer.lower()]
    if question_type in ("date", "location"):
        answer = _LEADING_PREPOSITION.sub("", answer)
    return answer.rstrip(_TRAILING)


def answer_passages(state: State, ctx: Context) -> list[str]:
    """The texts the answer was read from: web snippets for ``web_search``, the precision
    index's cited chunks for ``fallback``, else the prompt's chunks of the primary index; ``[]``
    when the index cannot be opened."""
    by = state.get("answered_by", "")
    if by == "web_search":
        return [r.get("snippet", "") for r in state.get("web_results", [])]
    try:
        if by == "fallback":
            chunks = retriever_for(ctx, strategy="precision").index.chunks
            ids = [s["chunk_id"] for s in state.get("sources", [])]
        else:
            chunks = retriever_for(ctx).index.chunks
            ids = state.get("context_chunk_ids") or [
                r["chunk_id"] for r in state.get("retrieved", [])
            ]
        return [chunks[i].text for i in ids if 0 <= i < len(chunks)]
    except Exception:  # no index (a graph run on state alone): nothing to snap to
        return []


def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Post-process the answer (:func:`postprocess`; with ``grounding="snap"`` the closest
    context span, :func:`kbqa.llm.grounding.snap_to_span`; then :func:`snap_to_context`), or give
    the abstention phrase."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    answer = state.get("answer", "")
    abstained = bool(state.get("abstained", True)) or not answer
    if not abstained:
        titles = [s["title"] for s in state.get("sources", []) if s.get("title")]
        qtype = state.get("question_type", "other")
        answer = postprocess(answer, qtype, titles, state.get("language"))
        passages = answer_passages(state, ctx)
        if ctx.grounding == "snap" and answer.lower() not in _YES_NO_IN["en"]:
            answer = snap_to_span(answer, passages)
        answer = snap_to_context(answer, qtype, passages)
        abstained = not answer
    return {
        "answer": ctx.abstention_phrase if abstained else answer,
        "abstained": abstained,
        # a final abstention was produced by no stage: attribution counts it apart
        "answered_by": "abstained" if abstained else state.get("answered_by", "generate"),
        **visited("finalize", started),
    }
