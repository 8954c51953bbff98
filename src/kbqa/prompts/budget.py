"""Fit a prompt into a token budget: the one budgeting rule serving and fine-tuning share.

The generate node and ``kbqa finetune``'s data builder both call :func:`fit_prompt` with
:func:`prompt_budget`, so a fine-tuned reader is trained on exactly the passages it would be shown
when serving. The verify node fits its own prompt with :func:`fit_passages`, counted in the
verifier's tokens (a 1.5B Qwen verifier spends about three times Gemma's tokens on Bangla).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from langchain_core.messages import BaseMessage

from kbqa.prompts.answer import Passage, render_answer_prompt

SAFETY_TOKENS = 8
"""Tokens kept free beyond the answer budget (BOS, template rounding)."""
TRUNCATION_STEPS = 16
"""Most cuts of a single remaining passage before it is dropped."""
CHAT_OVERHEAD_TOKENS = 8
"""Template tokens per message assumed when budgeting ChatML prompts (``<|im_start|>role``)."""
PLAIN_OVERHEAD_TOKENS = 2
"""Tokens added to a plain-text prompt's own (BOS and one spare)."""


class TokenCounter(Protocol):
    """Counts a prompt's tokens in the reader's own tokenizer."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int: ...


def count_prompt_tokens(
    messages: Sequence[BaseMessage], style: str, count: Callable[[str], int]
) -> int:
    """Prompt tokens of ``messages``: each content's tokens (``count``, no BOS) plus the template
    overhead of ``style`` (:data:`CHAT_OVERHEAD_TOKENS` per ChatML message, else
    :data:`PLAIN_OVERHEAD_TOKENS`)."""
    body = sum(count(str(m.content)) for m in messages)
    overhead = CHAT_OVERHEAD_TOKENS * len(messages) if style == "chatml" else PLAIN_OVERHEAD_TOKENS
    return body + overhead


def prompt_budget(n_ctx: int, max_answer_tokens: int) -> int:
    """Tokens the prompt may take: the context window less the answer and
    :data:`SAFETY_TOKENS`."""
    return n_ctx - max_answer_tokens - SAFETY_TOKENS


def fit_prompt(
    model: TokenCounter,
    question: str,
    passages: list[tuple[int, Passage]],
    budget: int,
    *,
    style: str = "completion",
    question_type: str = "other",
    language: str = "bn",
    variant: str = "coverage",
) -> tuple[list[BaseMessage], list[int], int]:
    """Render the answer prompt with as many passages as fit in ``budget`` tokens.

    Args:
        model: Anything whose ``get_num_tokens_from_messages`` counts prompt tokens: the
            serving chat model, or the fine-tuning data builder's tokenizer.
        question: The question.
        passages: ``(rank, passage)`` pairs in prompt order; rank 1 is the best hit.
        budget: Maximum prompt tokens.
        style, question_type, language, variant: Passed to :func:`render_answer_prompt`.

    Returns:
        ``(messages, kept, tokens)``: the prompt, the indices into ``passages`` it holds, and
        its size in tokens.

    Raises:
        ValueError: Even with no passage the prompt exceeds ``budget`` (question too long).
    """
    return fit_passages(
        model,
        passages,
        budget,
        lambda shown: render_answer_prompt(
            question,
            shown,
            style=style,
            question_type=question_type,
            language=language,
            variant=variant,
        ),
    )


def fit_passages(
    model: TokenCounter,
    passages: list[tuple[int, Passage]],
    budget: int,
    render: Callable[[list[Passage]], list[BaseMessage]],
) -> tuple[list[BaseMessage], list[int], int]:
    """The prompt ``render`` makes from as many of ``passages`` as fit in ``budget`` tokens of
    ``model``'s tokenizer: the lowest-ranked passages (a hit and its padding share a rank) are
    dropped first, then a single remaining passage is cut.

    Args:
        model: Counts prompt tokens (``get_num_tokens_from_messages``).
        passages: ``(rank, passage)`` pairs in prompt order; rank 1 is the best hit.
        budget: Maximum prompt tokens.
        render: The prompt for a list of passages (the reader's, the verifier's).

    Returns:
        ``(messages, kept, tokens)``: the prompt, the indices into ``passages`` it holds, and
        its size in tokens.

    Raises:
        ValueError: Even with no passage the prompt exceeds ``budget`` (question too long).
    """
    kept = list(range(len(passages)))
    texts = {i: p.text for i, (_, p) in enumerate(passages)}

    def shown() -> list[BaseMessage]:
        return render([Passage(passages[i][1].title, texts[i]) for i in kept])

    for _ in range(len(passages) + TRUNCATION_STEPS + 1):  # each step drops a rank or cuts text
        messages = shown()
        tokens = model.get_num_tokens_from_messages(messages)
        if tokens <= budget:
            return messages, kept, tokens
        if not kept:
            break
        ranks = {passages[i][0] for i in kept}
        if len(ranks) > 1:
            worst = max(ranks)
            kept = [i for i in kept if passages[i][0] != worst]
        else:
            longest = max(kept, key=lambda i: len(texts[i]))
            keep_chars = int(len(texts[longest]) * budget / tokens * 0.9)
            if keep_chars < 40:
                kept.remove(longest)
            else:
                texts[longest] = texts[longest][:keep_chars]
        if not kept:
            break
    else:
        kept = []
    messages = shown()
    tokens = model.get_num_tokens_from_messages(messages)
    if tokens <= budget:
        return messages, kept, tokens
    raise ValueError(
        f"the prompt without any passage needs {tokens} tokens but only {budget} are left for it "
        "(n_ctx minus the answer budget); shorten the question or raise n_ctx"
    )
