"""The prompt of the LLM-based reranker: a (question, passage) pair and a yes/no instruction.

FlagEmbedding's LLM rerankers (bge-reranker-v2-gemma, Chen et al. 2024) read ``A: {query}``,
``B: {passage}`` and an instruction, and score the pair by the logit of ``Yes`` at the next
position. kbqa's reranker (``kbqa finetune reranker``) is trained and served with this prompt;
the training data builder calls the same render functions as the serving scorer.

The question comes first, so the pairs of one question share the prefix
:func:`render_rerank_prefix`, which llama.cpp evaluates once per question.
"""

from __future__ import annotations

from kbqa.text import visible_text

RERANK_INSTRUCTION = (
    "Given a query A and a passage B, determine whether the passage contains an answer to the "
    "query by providing a prediction of either 'Yes' or 'No'."
)
"""bge-reranker-v2-gemma's instruction (FlagEmbedding, ``FlagLLMReranker``'s default prompt)."""

RELEVANT = "Yes"
IRRELEVANT = "No"
"""The two targets; a pair's score is the logit of the first token of ``" Yes"``."""

MAX_PASSAGE_CHARS = 1200
"""A passage is cut to this many characters (a chunk is about 800: HybridRAG-BN's size)."""


def render_rerank_prefix(question: str) -> str:
    """The part of every pair's prompt that depends on the question alone (ends in a newline,
    where llama.cpp's and Hugging Face's tokenizers both split)."""
    return f"A: {visible_text(question).strip()}\n"


def render_rerank_prompt(question: str, title: str, passage: str) -> str:
    """The whole prompt of one pair: the prefix, ``B:`` with the passage's title and text, and
    the instruction. The answer follows after a space (``" Yes"`` / ``" No"``)."""
    text = visible_text(passage).strip()[:MAX_PASSAGE_CHARS]
    head = f"{visible_text(title).strip()}\n" if title.strip() else ""
    return f"{render_rerank_prefix(question)}B: {head}{text}\n{RERANK_INSTRUCTION}"
