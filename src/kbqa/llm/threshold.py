"""The abstention threshold: the reader abstains exactly when its probability of beginning the
abstention phrase reaches a threshold, whichever way it would begin it.

Greedy decoding abstains whenever the phrase's first token has the highest logit, which a reader
fine-tuned with one fixed phrase does too often: the phrase is one token sequence, while an
answer's probability is spread over many first tokens. :class:`AbstentionThreshold` (a
llama.cpp logits processor) therefore decides by probability, and the decision covers every
way of beginning the phrase:

- **Every tokenisation.** A token begins the phrase when its text, after any leading
  whitespace or punctuation, is a non-empty prefix of the phrase or has the phrase as a prefix,
  ASCII case folded: ``▁Context``, ``Context``, ``▁context``, ``Con``, ``C``, ``"Context``,
  ``Context-এ তথ্য নেই।`` (:func:`phrase_tokens`).
- **Any lead-in.** A reply may open with whitespace or punctuation (a lone ``▁``, a quote)
  before its first word, so the decision is taken at the first token that is not only that:
  the probability is summed over the steps the reply spends on such a lead-in, each weighted by
  the probability of the lead-in taken so far (``p = s1 + P(▁) * s2`` for a reply that opens
  with ``▁``; Gemma writes ``▁`` alone before an ASCII number, so a lone space cannot count as
  a start by itself).
- **No words at all.** Ending the reply before it holds a word (an end-of-generation token,
  or a stop sequence such as a line break) is the phrase's empty beginning: the abstention
  check reads an empty reply as an abstention, and a reader denied the phrase ends there
  (the shipped reader does: ``▁`` then a line break). Those tokens count and are masked with
  the phrase's starts.

At the first step where ``p >= threshold`` the reply becomes the phrase: only tokens that begin
it are allowed, then only tokens that continue it until it is whole. Below the threshold, the
tokens that begin the phrase or end the reply are masked at every lead-in step, and once the
reply has begun with a word it is left alone: a phrase written after other words (``[1]
Context-এ তথ্য নেই``) or a paraphrase (``তথ্য নেই``) is judged by the abstention check, as
before. Threshold 1 never abstains. Since the masked path is the same for every threshold, a
reading at threshold ``t`` is the phrase when the ``p`` recorded at threshold 1 is ``>= t`` and
the threshold-1 reply otherwise (what ``benchmarks/threshold_replay.py`` and ``kbqa finetune``'s
threshold curve rely on).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

TokenBytes = Callable[[int], bytes]
"""A token id's text as bytes (``Llama.detokenize([id])``)."""


def fold(data: bytes) -> bytes:
    """``data`` lower-cased, tolerating a cut-off UTF-8 character at its end (a token may hold
    part of one); bytes that do not decode at all are folded as ASCII."""
    for cut in range(len(data), max(len(data) - 4, 0) - 1, -1):
        try:
            return data[:cut].decode("utf-8").lower().encode("utf-8") + data[cut:]
        except UnicodeDecodeError:
            continue
    return data.lower()


def _lead_in_chars(text: str) -> int:
    n = 0
    for ch in text:
        if ch == "\ufffd" or not (ch.isspace() or unicodedata.category(ch)[0] in "PSZ"):
            break
        n += 1
    return n


def lead_in(data: bytes) -> int:
    """Bytes of whitespace, punctuation and symbols at the start of ``data``."""
    text = data.decode("utf-8", "ignore")
    return len(text[: _lead_in_chars(text)].encode("utf-8"))


def core(data: bytes) -> bytes:
    """``data`` without its lead-in, folded: what is compared with the phrase."""
    return fold(data[lead_in(data) :])


def readable(data: bytes) -> bytes:
    """What of ``data`` a reply shows: a character cut off at the end (a token may hold the
    first byte of a Bangla letter) and bytes that are not UTF-8 show nothing."""
    return data.decode("utf-8", "ignore").encode("utf-8")


def begins(text: bytes, phrase: bytes) -> bool:
    """Does a reply or token whose :func:`core` is ``text`` begin ``phrase`` (a folded core)?"""
    return bool(text) and (phrase.startswith(text) or text.startswith(phrase))


def ends_empty(so_far: bytes, piece: bytes, stops: Sequence[bytes]) -> bool:
    """Does ``piece`` after ``so_far`` hit a stop sequence while the reply holds no word?"""
    joined = so_far + piece
    cuts = [i for stop in stops if (i := joined.find(stop)) >= 0]
    return bool(cuts) and not core(readable(joined[: min(cuts)]))


@dataclass(frozen=True)
class PhraseTokens:
    """The vocabulary as the abstention rule sees it, for one phrase and set of stop sequences
    (:func:`phrase_tokens`)."""

    phrase: bytes
    """The phrase's :func:`core`."""
    starts: np.ndarray
    """Ids of the tokens that begin the phrase."""
    inside: dict[int, bytes] = field(default_factory=dict)
    """Folded text of every token that occurs inside the phrase (what can continue it)."""
    stops: tuple[bytes, ...] = ()
    """The call's stop sequences."""
    stopping: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Ids of the tokens that hold a stop sequence (a line break...), or complete one that a
    reply without a word may have begun (``।`` spelt byte by byte)."""


def phrase_tokens(
    token_bytes: TokenBytes, vocab_size: int, phrase: str, stop: Sequence[str] = ()
) -> PhraseTokens:
    """Classify the vocabulary for ``phrase``: the tokens that begin it (:func:`begins`), those
    that occur inside it, and those that hold one of the ``stop`` sequences. One pass over the
    vocabulary (1-2 s for Gemma's 262k)."""
    target = core(phrase.encode("utf-8"))
    stops = tuple(s.encode("utf-8") for s in stop if s)
    tails = tuple(s[k:] for s in stops for k in range(1, len(s)) if not core(readable(s[:k])))
    starts, inside, stopping = [], {}, []
    for token in range(vocab_size):
        data = bytes(token_bytes(token))
        if not data:
            continue
        try:  # most tokens are whole characters: fold and strip them in one decoding
            text = data.decode("utf-8").lower()
            folded, started = text.encode("utf-8"), text[_lead_in_chars(text) :].encode("utf-8")
        except UnicodeDecodeError:
            folded, started = fold(data), core(data)
        if begins(started, target):
            starts.append(token)
        if target and folded in target:
            inside[token] = folded
        if any(s in data for s in stops) or data.startswith(tails):
            stopping.append(token)
    return PhraseTokens(
        target,
        np.asarray(starts, dtype=np.int64),
        inside,
        stops,
        np.asarray(stopping, dtype=np.int64),
    )


class AbstentionThreshold:
    """Decide abstention by the reader's own probability of beginning the abstention phrase
    (see the module's docstring).

    Args:
        tokens: The vocabulary classified for the phrase and the call's stop sequences
            (:func:`phrase_tokens`).
        threshold: In (0, 1]; 1 never abstains.
        prompt_tokens: Prompt length: ids after it are the reply.
        token_bytes: A token id's text as bytes.
        end_tokens: End-of-generation ids.

    The processor is a callable ``(input_ids, scores) -> scores`` for llama-cpp-python's
    ``logits_processor``. :attr:`probability` holds the probability of abstaining before a word
    (beginning the phrase, or ending the reply with none; ``None`` before the first step) and
    :attr:`abstaining` whether the reply is the phrase.
    """

    def __init__(
        self,
        tokens: PhraseTokens,
        threshold: float,
        prompt_tokens: int,
        token_bytes: TokenBytes,
        end_tokens: Sequence[int] = (),
    ) -> None:
        self.tokens = tokens
        self.threshold = threshold
        self.prompt_tokens = prompt_tokens
        self._bytes = token_bytes
        self.end_tokens = [int(t) for t in end_tokens]
        self._cache: dict[int, bytes] = {}
        self.probability: float | None = None
        self.abstaining = False
        self._settled = False  # the reply has begun otherwise: nothing left to decide
        self._path = 1.0  # probability of the lead-in taken so far
        self._last: np.ndarray | None = None  # the last decision step's probabilities

    def text_of(self, token: int) -> bytes:
        """A token's bytes (cached)."""
        if token not in self._cache:
            self._cache[token] = bytes(self._bytes(token))
        return self._cache[token]

    def reaches(self, probability: float) -> bool:
        """Is ``probability`` an abstention at this threshold?"""
        return self.threshold < 1.0 and probability >= self.threshold

    def __call__(self, input_ids: np.ndarray, scores: np.ndarray) -> np.ndarray:
        starts = self.tokens.starts
        if self._settled:
            return scores
        generated = [int(t) for t in input_ids[self.prompt_tokens :]]
        text = b"".join(self.text_of(t) for t in generated)
        if self.abstaining:  # the reply is the phrase: continued until whole
            so_far, phrase = core(text), self.tokens.phrase
            if len(so_far) < len(phrase) and phrase.startswith(so_far):
                return self._continue_phrase(so_far, scores)
            self._settled = True
            return scores
        if core(readable(text)):  # the reply holds a word: nothing left to decide
            self._settled = True
            return scores
        if generated and self._last is not None:  # a lead-in was taken: weigh what follows
            self._path *= float(self._last[generated[-1]])
        weights = np.exp(scores.astype(np.float64) - float(np.max(scores)))
        probs = weights / weights.sum()
        self._last = probs
        stops = self.tokens.stops
        ending = [t for t in self.tokens.stopping if ends_empty(text, self.text_of(t), stops)]
        abstaining = np.union1d(starts, np.asarray([*self.end_tokens, *ending], dtype=np.int64))
        self.probability = (self.probability or 0.0) + self._path * float(probs[abstaining].sum())
        if self.reaches(self.probability):
            self.abstaining = True
            out = np.full_like(scores, -np.inf)
            out[starts] = scores[starts]
            return out
        out = scores.copy()
        out[abstaining] = -np.inf
        return out

    def _continue_phrase(self, so_far: bytes, scores: np.ndarray) -> np.ndarray:
        """Allow only the tokens that continue the phrase begun as ``so_far``."""
        phrase = self.tokens.phrase
        keep = [t for t, piece in self.tokens.inside.items() if phrase.startswith(so_far + piece)]
        if not keep:
            return scores
        out = np.full_like(scores, -np.inf)
        out[keep] = scores[keep]
        return out
