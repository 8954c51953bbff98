"""classify: the question's language and type (:mod:`kbqa.answers.language`); a new question
clears the fields of the last one, and a follow-up in a thread is rewritten to stand alone."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.followup import LastTurn, standalone_question
from kbqa.answers.language import detect_language, question_type
from kbqa.context import Context
from kbqa.nodes.common import node
from kbqa.state import RESET, State, per_question_reset
from kbqa.text import is_blank


@node("classify")
def classify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``language`` and ``question_type``; in a thread with earlier turns, a follow-up
    (``আর তিনি কবে জন্মেছিলেন?``) becomes a standalone ``question``
    (:func:`~kbqa.answers.followup.standalone_question`), the user's words go to ``asked`` and
    the route records ``classify: follow-up rewritten``.

    Raises:
        ValueError: The question is empty or only whitespace.
    """
    question = state.get("question")
    if not isinstance(question, str) or is_blank(question):
        raise ValueError("question is empty: ask a non-empty question")
    language = detect_language(question)
    history = state.get("history") or []
    last = history[-1] if history else None
    standalone = standalone_question(
        question,
        language,
        LastTurn(
            last["question"],
            "" if last["abstained"] else last["answer"],
            last["question_type"],
            last["title"],
        )
        if last
        else None,
    )
    rewritten = standalone != question
    # a follow-up keeps its own type: the referent put in may hold a question word of its own
    own_type = question_type(question)
    qtype = own_type if rewritten and own_type != "other" else question_type(standalone)
    return {
        # a new question: every per-question field starts over (a thread may hold an old run)
        **per_question_reset(),
        "question": standalone,
        "asked": question if rewritten else "",
        "language": language,
        "question_type": qtype,
        "retries": 0,
        # the lists start over too; @node adds "classify" (and the status) after the RESET
        "route": [RESET, *(["classify: follow-up rewritten"] if rewritten else [])],
        "timings": [RESET],
        "stage_answers": [RESET],
    }
