"""The verifier prompt (HybridRAG-BN's refinement step): confirm the candidate answer or correct
it from the context, in at most 30 generated tokens.

This is the one render function a LoRA-fine-tuned verifier is trained and served with, so the
training data builder must call :func:`render_verify_prompt` too.
"""

from __future__ import annotations

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from kbqa.prompts.answer import ABSTENTION_PHRASE, Passage, context_block
from kbqa.prompts.budget import TokenCounter, fit_passages
from kbqa.text import visible_text

VERIFY_INSTRUCTION = (
    "You check a short answer to a question against the context. If the candidate answer is "
    "correct and supported by the context, repeat it exactly. If it is wrong or too long, write "
    "the correct short answer copied from the context. If the context does not contain the "
    f"answer, write exactly: {ABSTENTION_PHRASE}"
)


def render_verify_prompt(
    question: str,
    passages: list[Passage],
    candidate: str,
    *,
    hint: str = "",
    style: str = "completion",
) -> list[BaseMessage]:
    """Render the verifier prompt.

    Args:
        question: The user's question.
        passages: The context the candidate was generated from, best first.
        candidate: The answer to check (the abstention phrase when the reader abstained).
        hint: A span the pattern extractor found (shown as a second candidate when it differs).
        style: ``completion`` (plain text ending in ``Verified answer:``) or ``chatml``.

    Returns:
        Messages for a chat model.
    """
    lines = [context_block(passages), f"Question: {visible_text(question).strip()}"]
    lines.append(f"Candidate answer: {candidate.strip()}")
    if hint and hint.strip() != candidate.strip():
        lines.append(f"Pattern match in the context: {hint.strip()}")
    body = "\n".join(lines)
    if style == "chatml":
        return [SystemMessage(content=VERIFY_INSTRUCTION), HumanMessage(content=body)]
    return [HumanMessage(content=f"{VERIFY_INSTRUCTION}\n\n{body}\nVerified answer:")]


def fit_verify_prompt(
    counter: TokenCounter,
    question: str,
    passages: list[tuple[int, Passage]],
    candidate: str,
    budget: int,
    *,
    hint: str = "",
    style: str = "completion",
) -> tuple[list[BaseMessage], list[int]]:
    """The verifier prompt with as many of the reader's passages as fit in ``budget`` tokens of
    the verifier's own tokenizer (:func:`kbqa.prompts.budget.fit_passages`): what the verify
    node sends and what ``kbqa finetune verifier`` trains on.

    Args:
        counter: Counts prompt tokens in the verifier's tokenizer.
        question, candidate, hint, style: See :func:`render_verify_prompt`.
        passages: ``(rank, passage)`` pairs the reader read, in prompt order.
        budget: Prompt tokens allowed (:func:`kbqa.prompts.budget.prompt_budget` of the
            verifier's window and ``max_verify_tokens``).

    Returns:
        ``(messages, kept)``: the prompt and the indices of ``passages`` it holds.

    Raises:
        ValueError: The prompt does not fit even without passages.
    """
    messages, kept, _ = fit_passages(
        counter,
        passages,
        budget,
        lambda shown: render_verify_prompt(question, shown, candidate, hint=hint, style=style),
    )
    return messages, kept
