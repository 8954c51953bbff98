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

# the abstention rule lives in kbqa.llm.threshold; kbqa.finetune still names it here
from kbqa.llm.threshold import AbstentionThreshold as AbstentionThreshold

Grounding = Literal["off", "snap", "constrained"]
GROUNDING_MODES: tuple[Grounding, ...] = ("off", "snap", "constrained")
DEFAULT_GROUNDING: Grounding = "constrained"
"""Measured best of the three with the tuned reader (gold passages, BanglaRQA validation, 60
questions, seed 0, abstention threshold 0.9): F1 0.284 constrained, 0.277 snap, 0.269 off;
``docs/finetune.md``."""
TOP_CANDIDATES = 64
"""Next-token candidates :class:`SpanConstraint` checks per step, best logit first."""
WIDE_CANDIDATES = 4096
"""Candidates checked, best first, for an answer's first token when none of the
:data:`TOP_CANDIDATES` is allowed (a few milliseconds of byte search)."""


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
        if not text:  # one lead-in (a lone space before a number); more is no answer
            return not so_far
        if 0x80 <= text[0] <= 0xBF:  # a UTF-8 continuation byte: a span starts at a character
            return False
        return text in self.context or any(f.startswith(text) for f in self.fixed)

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        so_far = b"".join(self.text_of(int(t)) for t in input_ids[self.prompt_tokens :])
        n = min(self.top_n, scores.shape[-1])
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best])]
        keep = [int(t) for t in best if np.isfinite(scores[t]) and self.allowed(so_far, int(t))]
        if not keep and not so_far.strip():  # no answer yet: look further before giving up
            keep = self._first_allowed(so_far, scores)
        if not keep:  # nothing in reach continues a span: end the answer here
            keep = [t for t in sorted(self.end_tokens) if np.isfinite(scores[t])]
        if not keep:  # ending is masked too (the abstention threshold wants a word): the
            keep = [int(best[0])]  # reader's best, which finalize's grounding then judges
        masked = np.full_like(scores, -np.inf)
        masked[keep] = scores[keep]
        if keep[0] != int(best[0]):
            self.masked_steps += 1
        return masked

    def _first_allowed(self, so_far: bytes, scores: np.ndarray) -> list[int]:
        """The best allowed token among the :data:`WIDE_CANDIDATES` best, as a list (empty if
        none): the first token of an answer, where the reader's own best ones left the
        context (a number the passage lacks, the middle of a character)."""
        n = min(WIDE_CANDIDATES, scores.shape[-1])
        wide = np.argpartition(-scores, n - 1)[:n]
        for t in wide[np.argsort(-scores[wide])]:
            if np.isfinite(scores[t]) and self.allowed(so_far, int(t)):
                return [int(t)]
        return []
