"""Grounded reading: an answer is a span of the context, a yes/no word, or the abstention phrase.

Two ways, selected by ``Context.grounding``:

- ``constrained``: :class:`SpanConstraint`, a llama.cpp logits processor. At each step it walks
  the reader's best next tokens (by logit) and keeps only those whose text continues the answer
  so far as a byte substring of the context that begins at a word (:func:`word_starts`), or as
  a prefix of an allowed fixed answer; every other token is masked. Matching is on bytes, not
  token ids, because a Bangla word inside the context is often tokenised with its case ending
  attached (``বুড়িগঙ্গার``), while the answer wants the bare stem.
- ``snap``: free decoding, then :func:`kbqa.answers.snap.snap_to_span` replaces an answer that
  is not in the context by the most similar context span.
"""

from __future__ import annotations

import unicodedata
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


def opens_answer(ch: str) -> bool:
    """May an answer span begin with character ``ch``? A letter, a digit or a currency sign;
    not punctuation (a danda alone is an empty answer) nor a combining mark (the middle of a
    Bangla syllable)."""
    category = unicodedata.category(ch)
    return category[0] in "LN" or category == "Sc"


def opening_mark(ch: str) -> bool:
    """Is ``ch`` a quotation mark or an opening bracket, which an answer may keep before its
    first word (the reader's token is often ``‘পে`` or ``'পা``)?"""
    return unicodedata.category(ch) in ("Ps", "Pi") or ch in "\"'"


def in_word(ch: str) -> bool:
    """Does a letter after ``ch`` go on the same word? After a letter, digit or mark, and after
    a joiner or other format character (ZWNJ and ZWJ inside Bangla words, ``নেদারল্যান্ড্‌স``; a
    soft hyphen) or a connector (``_``)."""
    category = unicodedata.category(ch)
    return category[0] in "LNM" or category in ("Cf", "Pc")


def word_starts(context: bytes) -> dict[bytes, list[int]]:
    """Byte offsets in ``context`` (UTF-8) where an answer span may begin, keyed by their first
    three bytes: a character that :func:`opens_answer` and is not inside a word (the character
    before it is not :func:`in_word`), or a quotation mark or opening bracket
    (:func:`opening_mark`) just before such a character and not itself inside a word (an
    apostrophe between letters, ``People's``, ``O'Brien``, opens nothing)."""
    starts: dict[bytes, list[int]] = {}
    offset, previous, before = 0, "", ""
    for ch in context.decode("utf-8", "replace"):
        size = len(ch.encode("utf-8"))
        after_word = bool(before) and in_word(before)
        inside = bool(previous) and (in_word(previous) or (previous in "'’" and after_word))
        if opens_answer(ch) and not inside:  # (an apostrophe between letters: O'Brien)
            begin = offset - len(previous.encode("utf-8"))
            marked = previous and opening_mark(previous) and not after_word
            for start in ([begin] if marked else []) + [offset]:
                starts.setdefault(context[start : start + 3], []).append(start)
        offset, previous, before = offset + size, ch, previous
    return starts


def has_word(answer: bytes) -> bool:
    """Does ``answer`` (UTF-8, maybe cut off) hold a whole letter or digit?"""
    return any(ch.isalnum() for ch in answer.decode("utf-8", "ignore"))


class SpanConstraint:
    """Mask next tokens so the generated answer stays a span of the context.

    A span begins at the start of a word (:func:`word_starts`, after one lead-in space), or at
    a quotation mark or bracket before one: not at other punctuation and not inside a word. The
    tuned reader, denied the abstention phrase, once spelt a danda's first two bytes and, the
    danda itself denied, wrote bytes that are no text until its token limit; another time it
    began inside a word (``ঙ্গার`` of ``গঙ্গার``).

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
        # "replace": a lone surrogate (a bad JSON escape in a passage) is no reason to fail
        self.context = "\n".join(contexts).encode("utf-8", "replace")
        self.fixed = [f.encode("utf-8", "replace") for f in fixed if f]
        self.prompt_tokens = prompt_tokens
        self.end_tokens = set(end_tokens)
        self.top_n = top_n
        self.masked_steps = 0
        self._whole = b"\n".join([self.context, *self.fixed])  # where a span may be copied from
        self._starts = word_starts(self.context)
        offset = len(self.context) + 1
        for answer in self.fixed:  # a fixed answer is a whole text a span may begin
            self._starts.setdefault(answer[:3], []).append(offset)
            offset += len(answer) + 1
        self._short = {key[:n] for key in self._starts for n in (1, 2) if n <= len(key)}

    def text_of(self, token: int) -> bytes:
        """A token's bytes (cached)."""
        if token not in self._cache:
            self._cache[token] = bytes(self._bytes(int(token)))
        return self._cache[token]

    def allowed(self, so_far: bytes, token: int) -> bool:
        """May ``token`` follow the answer bytes ``so_far``?"""
        if token in self.end_tokens:  # an answer ends once it holds a word, not at a quote
            return has_word(so_far)
        piece = self.text_of(token)
        if piece[:1] == b"\n" and has_word(so_far):  # a line break ends it (a stop sequence)
            return True
        text = (so_far + piece).lstrip()
        if not text:  # one lead-in (a lone space before a number); more, or a line break (the
            return not so_far and b"\n" not in piece  # stop sequence), is no answer
        if len(text) < 3:  # part of a word's first character (or a short word)
            return text in self._short
        if text not in self._whole:  # one fast search rules out most candidates
            return False
        return any(self._whole.startswith(text, i) for i in self._starts.get(text[:3], ()))

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        so_far = b"".join(self.text_of(int(t)) for t in input_ids[self.prompt_tokens :])
        n = min(self.top_n, scores.shape[-1])
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best])]
        keep = [int(t) for t in best if np.isfinite(scores[t]) and self.allowed(so_far, int(t))]
        if not keep and not has_word(so_far):  # no word yet: look further before giving up
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
