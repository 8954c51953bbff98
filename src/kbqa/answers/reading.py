"""Reading: the reader's prompt, fitted to its context window, and a generation that stops as
soon as it is settled as an abstention.

The prompt is budgeted in the model's own tokens so that prompt + answer never exceed ``n_ctx``
(:func:`kbqa.prompts.budget.fit_prompt`): the lowest-ranked hits (with their padding chunks) are
dropped first; a single remaining passage that is still too long is cut.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, NamedTuple

from langchain_core.caches import BaseCache
from langchain_core.globals import get_llm_cache
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import RunnableConfig

from kbqa.answers.abstention import settled_abstention
from kbqa.answers.vocabulary import YES_NO_ANSWERS
from kbqa.context import Context
from kbqa.llm.cancel import CANCEL
from kbqa.prompts import ANSWER_STOP, PLAIN_STYLES, Passage
from kbqa.prompts.budget import fit_prompt, prompt_budget

log = logging.getLogger("kbqa.generate")

YES_NO_WORDS = YES_NO_ANSWERS
"""Whole answers a constrained reply may give besides context spans and the abstention phrase."""


class Reading(NamedTuple):
    """What :func:`generate_answer` read and said."""

    raw: str
    """The model's text."""
    kept: list[int]
    """Indices of the passages that fitted the prompt."""
    prompt_tokens: int
    """The prompt's size in the model's tokens."""
    abstention_probability: float | None = None
    """The reader's probability of beginning the abstention phrase, in [0, 1]: summed over every
    token that can begin it, after any lead-in of whitespace or punctuation, and over ending
    the reply before a word (:class:`~kbqa.llm.threshold.AbstentionThreshold`); ``None`` when
    no threshold decided it (a chat-template reader, or threshold 0)."""
    abstention_threshold: float | None = None
    """The threshold that probability was compared with (the run's or the reader's own);
    ``None`` when none was."""


def choose_reading(readings: Sequence[tuple[bool, float | None]]) -> int:
    """The reading ``--reading each`` answers with: of those that did not abstain, the one
    whose reader was least likely to abstain; when every one abstained, the same over all.
    A reading without a probability ranks below every reading with one; ties go to the
    better-ranked hit.

    The confidence-across-paragraphs rule of Clark and Gardner 2018 ("Simple and Effective
    Multi-Paragraph Reading Comprehension"), with the reader's abstention probability as the
    confidence; DrQA (Chen et al. 2017) likewise reads each paragraph and keeps the best span.

    Args:
        readings: ``(abstained, abstention probability)`` of each reading, in retrieval order.

    Returns:
        The chosen reading's index.

    Raises:
        ValueError: No reading.
    """
    if not readings:
        raise ValueError("choose_reading needs at least one reading")
    answered = [i for i, (abstained, _) in enumerate(readings) if not abstained]
    pool = answered or list(range(len(readings)))
    return min(pool, key=lambda i: (readings[i][1] is None, readings[i][1] or 0.0, i))


def generate_answer(
    model: BaseChatModel,
    ctx: Context,
    question: str,
    passages: list[tuple[int, Passage]],
    *,
    question_type: str = "other",
    language: str = "bn",
    variant: str = "coverage",
    max_tokens: int | None = None,
    config: RunnableConfig | None = None,
) -> Reading:
    """Fit the reader prompt to the context window and generate.

    Args:
        model: The reader.
        ctx: Run settings (``n_ctx``, ``max_answer_tokens``).
        question: The question.
        passages: ``(rank, passage)`` pairs in prompt order.
        question_type, language, variant: See :func:`kbqa.prompts.render_answer_prompt`.
        max_tokens: Generation budget (default ``ctx.max_answer_tokens``).
        config: The model call's runnable config (``generate`` under ``--reading each`` tags
            its readings ``nostream``, so LangGraph's ``messages`` stream shows none of them).

    Returns:
        A :class:`Reading`: the model's text, the indices of ``passages`` that fitted, the
        prompt's size in tokens and the reader's abstention probability.

    Raises:
        ValueError: The question alone does not fit (see :func:`fit_prompt`).
    """
    style = getattr(model, "prompt_style", "completion")
    messages, kept, tokens = fit_prompt(
        model,
        question,
        passages,
        prompt_budget(ctx.n_ctx, ctx.max_answer_tokens),
        style=style,
        question_type=question_type,
        language=language,
        variant=variant,
    )
    plain = style in PLAIN_STYLES
    stop = ANSWER_STOP if plain else None  # a chat model may open with "\n"
    extra: dict[str, Any] = {}
    if ctx.grounding_mode == "constrained" and plain:
        extra = {
            "grounding": [passages[i][1].text for i in kept],
            "fixed": [ctx.abstention_phrase, *YES_NO_WORDS[language if language == "bn" else "en"]],
        }
    threshold = ctx.abstention_threshold
    if threshold is None:  # the reader's own (a tuned reader's manifest chooses it)
        threshold = float(getattr(model, "reader_abstention_threshold", 0.0))
    if threshold and plain and ctx.abstention_phrase:
        extra |= {
            "abstention_threshold": threshold,
            "abstention_phrase": ctx.abstention_phrase,
        }
    if config is not None:
        extra["config"] = config
    raw, probability = stream_until_abstention(
        model, messages, stop, max_tokens or ctx.max_answer_tokens, ctx.abstention_phrase, **extra
    )
    used = extra.get("abstention_threshold")
    return Reading(raw, kept, tokens, probability, None if used is None else float(used))


def _uses_cache(model: BaseChatModel) -> bool:
    if isinstance(model.cache, BaseCache):
        return True
    return model.cache is not False and get_llm_cache() is not None


def stream_until_abstention(
    model: BaseChatModel,
    messages: list[BaseMessage],
    stop: list[str] | None,
    max_tokens: int,
    phrase: str,
    **kwargs: Any,
) -> tuple[str, float | None]:
    """Stream the model's reply and stop as soon as it is settled as an abstention
    (:func:`~kbqa.answers.abstention.settled_abstention`): output is constrained while it
    is generated, not only judged afterwards, and an abstaining model (``Context-এ তথ্য নেই,
    কারণ ...``, ``I don't know. The context ...``) stops paying for its explanation.

    Under an LLM cache (the ablation runs' memoised generations; LangChain's ``stream`` does not
    read the cache) the reply is generated whole with ``invoke``; the verdict is the same.

    ``kwargs`` go to the model call (``grounding=[texts]``, ``fixed=[answers]``: a span-
    constrained reply, see :class:`kbqa.llm.chat.LlamaCppChatModel`).

    Returns:
        ``(text, abstention_probability)``: the text generated up to the end, a stop sequence,
        ``max_tokens`` or the settled abstention; and the model's
        ``response_metadata["abstention_probability"]`` (``None`` when it gives none).
    """
    config = kwargs.pop("config", None)
    if _uses_cache(model):
        reply = model.invoke(messages, config, stop=stop, max_tokens=max_tokens, **kwargs)
        return str(reply.content), reply.response_metadata.get("abstention_probability")
    text, probability = "", None
    for part in model.stream(messages, config, stop=stop, max_tokens=max_tokens, **kwargs):
        text += str(part.content)
        if probability is None:
            probability = part.response_metadata.get("abstention_probability")
        if CANCEL.is_set():  # Ctrl-C in kbqa chat: the answer is abandoned
            break
        if settled_abstention(text, phrase):
            log.debug("abstention settled after %d chars; generation stopped", len(text))
            break
    return text, probability
