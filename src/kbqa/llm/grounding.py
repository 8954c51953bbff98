"""Grounded reading: an answer is a span of the context, a yes/no word, or the abstention phrase.

Two ways, selected by ``Context.grounding``:

- ``constrained``: :class:`SpanConstraint`, a llama.cpp logits processor. At each step it walks
  the reader's best next tokens (by logit) and keeps only those whose text continues the answer
  so far as a byte substring of the context, or as a prefix of an allowed fixed answer; every
  other token is masked. Matching is on bytes, not token ids, because a Bangla word inside the
  context is often tokenised with its case ending attached (``বুড়িগঙ্গার``), while the answer
  wants the bare stem.
- ``snap``: free decoding, then :func:`kbqa.answers.snap.snap_to_span` replaces an answer that
  is not in the context by the most similar context span.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

Grounding = Literal["off", "snap", "constrained"]
GROUNDING_MODES: tuple[Grounding, ...] = ("off", "snap", "constrained")
DEFAULT_GROUNDING: Grounding = "constrained"
"""Measured best of the three with the tuned reader (gold passages, BanglaRQA validation, 60
questions, seed 0, abstention threshold 0.9): F1 0.284 constrained, 0.277 snap, 0.269 off;
``docs/finetune.md``."""
TOP_CANDIDATES = 64
"""Next-token candidates :class:`SpanConstraint` checks per step, best logit first."""


class SpanConstraint:
    """Mask next tokens so the generated answer stays a span of the context.

    Args:
        token_bytes: Maps a token id to its text as bytes (``Llama.detokenize([id])``).
        contexts: Passage texts the answer may be copied from.
        fixed: Whole answers also allowed (the abstention phrase, yes/no words).
        prompt_tokens: Prompt length: ids after it are the answer.
        end_tokens: End-of-generation ids, allowed once the answer is not empty.
        top_n: Candidates checked per step.

    The processor is a callable ``(input_ids, scores) -> scores`` for llama-cpp-python's
    ``logits_processor``; ``scores`` is a float array over the vocabulary.
    """

    def __init__(
        self,
        token_bytes: Any,
        contexts: Sequence[str],
        fixed: Sequence[str],
        prompt_tokens: int,
        end_tokens: Sequence[int],
        top_n: int = TOP_CANDIDATES,
    ) -> None:
        self._bytes = token_bytes
        self._cache: dict[int, bytes] = {}
        self.context = "\n".join(contexts).encode("utf-8")
        self.fixed = [f.encode("utf-8") for f in fixed if f]
        self.prompt_tokens = prompt_tokens
        self.end_tokens = set(end_tokens)
        self.top_n = top_n
        self.masked_steps = 0

    def text_of(self, token: int) -> bytes:
        """A token's bytes (cached)."""
        if token not in self._cache:
            self._cache[token] = bytes(self._bytes(int(token)))
        return self._cache[token]

    def allowed(self, so_far: bytes, token: int) -> bool:
        """May ``token`` follow the answer bytes ``so_far``?"""
        if token in self.end_tokens:
            return bool(so_far.strip())
        piece = self.text_of(token)
        if so_far.strip() and piece[:1] == b"\n":  # a line break ends the answer (stop sequence)
            return True
        text = (so_far + piece).lstrip()
        if not text:
            return True
        return text in self.context or any(f.startswith(text) for f in self.fixed)

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        so_far = b"".join(self.text_of(int(t)) for t in input_ids[self.prompt_tokens :])
        n = min(self.top_n, scores.shape[-1])
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best])]
        keep = [int(t) for t in best if self.allowed(so_far, int(t))]
        if not keep:  # nothing in reach continues a span: end the answer here
            keep = sorted(self.end_tokens)
        masked = np.full_like(scores, -np.inf)
        masked[keep] = scores[keep]
        if keep[0] != int(best[0]):
            self.masked_steps += 1
        return masked


class AbstentionThreshold:
    """Decide abstention by the reader's own probability of the abstention phrase.

    Greedy decoding abstains whenever the phrase's first token has the highest logit, which a
    reader fine-tuned with one fixed phrase does too often: the phrase is one token sequence,
    while an answer's probability is spread over many first tokens. At the first generated
    token this processor compares the probability of starting the phrase (summed over every
    token that can start it: ``▁Context``, ``▁context``, ``▁Cont``...) with ``threshold``: at or
    above it every other token is masked, below it those tokens are. Only the first token is
    decided: the model could still abstain in words that start otherwise (``তথ্য নেই``), which
    the abstention check catches as ever. The probability is kept in :attr:`probability`.

    Args:
        phrase_tokens: Ids of the tokens that start the abstention phrase (see
            :func:`phrase_start_tokens`).
        threshold: In (0, 1].
        prompt_tokens: Prompt length: the first generated position is right after it.
    """

    def __init__(self, phrase_tokens: Sequence[int], threshold: float, prompt_tokens: int) -> None:
        self.tokens = np.asarray(sorted(set(phrase_tokens)), dtype=np.int64)
        self.threshold = threshold
        self.prompt_tokens = prompt_tokens
        self.probability: float | None = None

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        if len(input_ids) != self.prompt_tokens or not len(self.tokens):
            return scores
        weights = np.exp(scores - scores.max())
        self.probability = float(weights[self.tokens].sum() / weights.sum())
        out = scores.copy()
        if self.probability >= self.threshold:
            keep = out[self.tokens].copy()
            out[:] = -np.inf
            out[self.tokens] = keep
        else:
            out[self.tokens] = -np.inf
        return out


MIN_PHRASE_START = 4
"""Shortest token text (case folded) counted as starting the abstention phrase: ``cont`` and
longer. Shorter pieces (``▁C``, ``▁Con``) stay allowed, so answers starting with them are
untouched; the model could in principle spell the phrase from them."""


def phrase_start_tokens(token_text: Any, vocab_size: int, phrase: str) -> list[int]:
    """Ids of the tokens whose text (stripped, case folded, at least :data:`MIN_PHRASE_START`
    characters) is a prefix of ``phrase``; ``token_text(id) -> str``. One pass over the
    vocabulary (0.7 s for Gemma's 262k)."""
    target = phrase.strip().lower()
    out = []
    for token in range(vocab_size):
        text = token_text(token).strip().lower()
        if len(text) >= MIN_PHRASE_START and target.startswith(text):
            out.append(token)
    return out
