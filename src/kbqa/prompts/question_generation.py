"""The question-generation prompt: a short factoid question whose answer is a span of a passage.

Used by ``kbqa eval generate`` to draft a dev set for a new knowledge base (type-aware RAG seed:
LLM-assisted candidate QA pairs, then human review). Output format, one pair::

    Question: <question>
    Answer: <span copied from the passage>
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

QG_INSTRUCTION = (
    "Write one short factoid question about the passage, in the language of the passage, whose "
    "answer is a short span (a name, date, number or a few words) copied exactly from the "
    "passage. The question must not be answerable from the title alone. Reply in two lines:\n"
    "Question: ...\nAnswer: ..."
)
QG_STOP = ["\n\n", "Passage:", "Title:"]

_QG_FEW_SHOT: dict[str, tuple[str, str, str, str]] = {
    "bn": (
        "রবীন্দ্রনাথ ঠাকুর",
        "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতায় জন্মগ্রহণ করেন। গীতাঞ্জলি কাব্যগ্রন্থের জন্য তিনি "
        "১৯১৩ সালে নোবেল পুরস্কার পান।",
        "রবীন্দ্রনাথ ঠাকুর কোন কাব্যগ্রন্থের জন্য নোবেল পুরস্কার পান?",
        "গীতাঞ্জলি",
    ),
    "en": (
        "Seine",
        "The Seine is a river in northern France. It flows through Paris into the English Channel.",
        "Into which body of water does the Seine flow?",
        "the English Channel",
    ),
}


def render_question_prompt(
    title: str, passage: str, *, style: str = "completion", language: str = "bn"
) -> list[BaseMessage]:
    """Render the question-generation prompt.

    Args:
        title: The passage's document title.
        passage: The chunk text.
        style: ``"completion"`` (one-shot plain text ending in ``Question:``) or ``"chatml"``
            (system instruction + user passage).
        language: ``"bn"`` or ``"en"``: picks the one-shot example.

    Returns:
        Messages for a chat model. Completion-style replies continue after ``Question:``.
    """
    body = f"Title: {title}\nPassage: {passage.strip()}"
    if style == "chatml":
        return [SystemMessage(content=QG_INSTRUCTION), HumanMessage(content=body)]
    t, p, q, a = _QG_FEW_SHOT.get(language, _QG_FEW_SHOT["en"])
    shot = f"Title: {t}\nPassage: {p}\nQuestion: {q}\nAnswer: {a}"
    return [HumanMessage(content=f"{QG_INSTRUCTION}\n\n{shot}\n\n{body}\nQuestion:")]
