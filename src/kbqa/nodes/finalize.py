"""finalize: clean the answer into a short span and attach its sources."""

from __future__ import annotations

import time
from typing import Any

import regex
from langgraph.runtime import Runtime

from kbqa.context import Context
from kbqa.nodes._record import context_of, visited
from kbqa.state import State

_LABEL = regex.compile(
    r"^\s*((উত্তর|উত্তরঃ|answer)\s*[:ঃ\-–]|(a|ans)\s*:|\[\s*\d+\s*\]\s*:?)\s*", regex.I
)
"""A leading answer label or a passage citation marker such as ``[3]`` (the prompt numbers
passages and small models copy the number)."""
_BARE_LABELS = frozenset({"উত্তর", "answer", "ans"})
_QUOTES = "\"'“”‘’«»`*_[](){}"
_TRAILING = " \t।.,;:!|-–—"


def clean_answer(raw: str, max_chars: int = 200) -> str:
    """Strip what small models wrap around a short answer.

    Keeps the first line that is not empty once a label is removed (``Answer:\nDhaka`` ->
    ``Dhaka``), removes ``উত্তর:`` / ``Answer:`` labels, surrounding quotes,
    brackets and markdown emphasis, and a trailing danda or full stop; folds spaces; cuts to
    ``max_chars`` at a word boundary.
    """
    line = ""
    for candidate in raw.splitlines():  # the first line with something left after a label
        for _ in range(3):
            candidate = _LABEL.sub("", candidate).strip().strip(_QUOTES).strip().rstrip(_TRAILING)
        if candidate and candidate.lower().rstrip("ঃ:") not in _BARE_LABELS:
            line = candidate
            break
    line = " ".join(line.split())
    if len(line) > max_chars:
        cut = line.rfind(" ", 0, max_chars)
        line = line[: cut if cut > max_chars // 2 else max_chars]
    return line


_EXPLANATION = regex.compile(
    r"\s*(?:,\s*)?(?:\bbecause\b|\bsince\b|\bas stated\b|\baccording to\b|\bwhich is\b|"
    r"কারণ|যেহেতু|অনুযায়ী|\(.*)\s.*$",
    regex.I,
)
_YES_NO = regex.compile(r"^(হ্যাঁ|হ্যা|না|yes|no)\b[\s,.;:!।-]", regex.I)
_LEADING_PREPOSITION = regex.compile(r"^(?:on|in|at|since|by|from|around|about)\s+(?=\S)", regex.I)


def postprocess(answer: str, question_type: str, titles: list[str]) -> str:
    """Type-aware clean-up of a short answer (type-aware RAG seed's strict post-processing).

    - a leading passage title the model copied from the prompt (``Jacksonville,_Florida: ...``)
      is dropped;
    - an explanation after the answer (``because ...``, ``কারণ ...``, a parenthesis) is cut;
    - yes/no answers are reduced to ``হ্যাঁ``/``না``/``Yes``/``No``;
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
    if question_type in ("date", "location"):
        answer = _LEADING_PREPOSITION.sub("", answer)
    return answer.rstrip(_TRAILING)


def finalize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Post-process the answer (:func:`postprocess`), or give the abstention phrase."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    answer = state.get("answer", "")
    abstained = bool(state.get("abstained", True)) or not answer
    if not abstained:
        titles = [s["title"] for s in state.get("sources", []) if s.get("title")]
        answer = postprocess(answer, state.get("question_type", "other"), titles)
        abstained = not answer
    return {
        "answer": ctx.abstention_phrase if abstained else answer,
        "abstained": abstained,
        # a final abstention was produced by no stage: attribution counts it apart
        "answered_by": "abstained" if abstained else state.get("answered_by", "generate"),
        **visited("finalize", started),
    }
