"""Prompt constants and render functions. Training-data builders must call the same renderers,
so the prompts a fine-tuned model sees in training and in serving cannot drift."""

from kbqa.prompts.answer import (
    ABSTENTION_PHRASE,
    ABSTENTION_PHRASE_EN,
    ANSWER_STOP,
    CONTEXT_MARKER,
    PLAIN_STYLES,
    PROMPT_STYLES,
    Passage,
    PromptStyle,
    prompt_text,
    render_answer_prompt,
)
from kbqa.prompts.verify import render_verify_prompt

__all__ = [
    "ABSTENTION_PHRASE",
    "ABSTENTION_PHRASE_EN",
    "ANSWER_STOP",
    "CONTEXT_MARKER",
    "PLAIN_STYLES",
    "PROMPT_STYLES",
    "Passage",
    "PromptStyle",
    "prompt_text",
    "render_answer_prompt",
    "render_verify_prompt",
]
