"""Deterministic scripted chat models for tests (no model file, no llama.cpp).

Names: ``fake/abstain`` always returns the abstention phrase; ``fake/first-sentence`` answers
with the first words of the first context passage; ``fake/script:<a>|<b>|...`` returns the given
answers in turn (then repeats the last; a trailing ``#tag`` only makes the name, and so the
cached instance, unique; an answer ending in ``@p``, ``ঢাকা@0.3``, gives the reader's
probability of beginning the abstention phrase, which a call's ``abstention_threshold`` then
decides as a real reader's does: the phrase when ``p >= threshold``); ``fake/slow:<seconds>``
sleeps that long, then answers like ``fake/first-sentence`` (for interrupting runs in tests);
``fake/fail`` raises at every call (a model crashing at run time).

:class:`ScriptedLlama` stands in for ``llama_cpp.Llama`` one level lower: it decodes greedily
from scripted logits through the logits processors a call passes, so
:class:`~kbqa.llm.chat.LlamaCppChatModel` and its processors (the abstention threshold, the span
constraint) run without a model file.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from kbqa.prompts import ABSTENTION_PHRASE, CONTEXT_MARKER


class ScriptedChatModel(BaseChatModel):
    """Returns scripted answers; counts tokens as whitespace-separated words."""

    model_name: str = "fake"
    mode: str = "script"
    script: list[str] = Field(default_factory=list)
    probabilities: list[float | None] = Field(default_factory=list)
    """Per scripted answer: its abstention probability (``@p`` in the name), or None."""
    n_ctx: int = 4096
    delay: float = 0.0
    _calls: int = PrivateAttr(default=0)
    _streamed: int = PrivateAttr(default=0)

    @classmethod
    def from_name(cls, name: str, n_ctx: int = 4096) -> ScriptedChatModel:
        """Build from ``fake/abstain``, ``fake/first-sentence`` or ``fake/script:a|b``."""
        kind = name.removeprefix("fake/")
        if kind == "abstain":
            return cls(model_name=name, mode="script", script=[ABSTENTION_PHRASE], n_ctx=n_ctx)
        if kind == "fail":
            return cls(model_name=name, mode="fail", n_ctx=n_ctx)
        if kind == "first-sentence":
            return cls(model_name=name, mode="first-sentence", n_ctx=n_ctx)
        if kind.startswith("slow:"):
            try:
                delay = float(kind[5:])
            except ValueError:
                raise ValueError(f"unknown fake model {name!r}") from None
            return cls(model_name=name, mode="first-sentence", n_ctx=n_ctx, delay=delay)
        if kind.startswith("script:"):
            answers = kind[7:].rsplit("#", 1)[0] if "#" in kind else kind[7:]
            scripted = [_with_probability(a) for a in answers.split("|")]
            return cls(
                model_name=name,
                mode="script",
                script=[a for a, _ in scripted],
                probabilities=[p for _, p in scripted],
                n_ctx=n_ctx,
            )
        raise ValueError(f"unknown fake model {name!r}")

    @property
    def calls(self) -> int:
        """How many times the model was called."""
        return self._calls

    @property
    def streamed(self) -> int:
        """How many streamed pieces (words with their trailing space) callers consumed."""
        return self._streamed

    @property
    def _llm_type(self) -> str:
        return "kbqa-fake"

    def get_num_tokens(self, text: str) -> int:
        return len(text.split())

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        return sum(self.get_num_tokens(str(m.content)) for m in messages)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._calls += 1
        needed = self.get_num_tokens_from_messages(messages) + int(kwargs.get("max_tokens") or 0)
        if needed > self.n_ctx:  # as llama.cpp refuses a prompt too long for its window
            raise ValueError(f"Requested tokens ({needed}) exceed context window of {self.n_ctx}")
        if self.delay:
            time.sleep(self.delay)
        if self.mode == "fail":
            raise RuntimeError("fake model failure (llama.cpp crashed, say)")
        if self.mode == "first-sentence":
            prompt = str(messages[-1].content)
            context = prompt.split(CONTEXT_MARKER)[-1].split("]", 1)[-1]
            text = " ".join(context.split()[:3]) or ABSTENTION_PHRASE
        else:
            turn = min(self._calls - 1, len(self.script) - 1)
            text = self.script[turn]
            p = self.probabilities[turn] if turn < len(self.probabilities) else None
            threshold = float(kwargs.get("abstention_threshold") or 0.0)
            if threshold:  # as a real reader's threshold: the phrase when p reaches it
                if p is not None and threshold < 1.0 and p >= threshold:
                    text = str(kwargs.get("abstention_phrase") or ABSTENTION_PHRASE)
                meta = {"abstention_probability": p}
                message = AIMessage(content=text, response_metadata=meta)
                return ChatResult(generations=[ChatGeneration(message=message)])
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted answer a word at a time (each word with the spaces after it); the first
        carries the reply's ``response_metadata``."""
        message = self._generate(messages, stop, run_manager, **kwargs).generations[0].message
        meta = dict(message.response_metadata)
        for piece in re.findall(r"\S+\s*|\s+", str(message.content)):
            self._streamed += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata=meta))
            meta = {}


def _with_probability(answer: str) -> tuple[str, float | None]:
    """``ঢাকা@0.3`` -> ``("ঢাকা", 0.3)``; an answer without a probability in [0, 1] after its
    last ``@`` (``a@b.org``) is kept whole."""
    text, sep, tail = answer.rpartition("@")
    try:
        p = float(tail) if sep else None
    except ValueError:
        p = None
    return (text, p) if p is not None and 0.0 <= p <= 1.0 else (answer, None)


EOS = "<eos>"
"""The end-of-generation token's name in a :class:`ScriptedLlama` script (its text is empty)."""


class ScriptedLlama:
    """A stand-in for ``llama_cpp.Llama``: greedy decoding over a small vocabulary, with scripted
    logits, through the call's ``logits_processor`` list.

    Args:
        vocab: Token texts; :data:`EOS` is added as id 0 when missing.
        logits: ``{reply so far: {token text: logit}}``; every token not named gets
            :data:`UNLIKELY`, and a reply not listed ends (:data:`EOS`).

    The prompt counts one token per whitespace-separated word, plus BOS; stop sequences cut the
    reply as llama.cpp's do. Only what :class:`~kbqa.llm.chat.LlamaCppChatModel` calls is here.
    """

    UNLIKELY = -20.0

    def __init__(self, vocab: Sequence[str], logits: dict[str, dict[str, float]]) -> None:
        self.vocab = [EOS, *(v for v in vocab if v != EOS)]
        self.ids = {text: i for i, text in enumerate(self.vocab)}
        self.logits = logits
        self.end_tokens = [0]
        self.metadata: dict[str, str] = {}

    def n_vocab(self) -> int:
        return len(self.vocab)

    def reset(self) -> None:
        """Forget the last prompt (a scripted reply depends on nothing cached)."""

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [0] * (int(add_bos) + len(text.split()))

    def detokenize(self, tokens: list[int], special: bool = False) -> bytes:
        return b"".join(b"" if t == 0 else self.vocab[t].encode("utf-8") for t in tokens)

    def create_completion(
        self,
        prompt: str,
        max_tokens: int = 16,
        stop: list[str] | None = None,
        stream: bool = False,
        logits_processor: list[Any] | None = None,
        **_: Any,
    ) -> Any:
        """llama-cpp-python's completion result: a dict, or an iterator of chunks."""
        pieces = self._decode(prompt, max_tokens, stop or [], logits_processor or [])
        if stream:
            return ({"choices": [{"text": piece, "finish_reason": None}]} for piece in pieces)
        text = "".join(pieces)
        return {"choices": [{"text": text, "finish_reason": "stop"}], "usage": {}}

    def _decode(
        self, prompt: str, max_tokens: int, stop: list[str], processors: list[Any]
    ) -> Iterator[str]:
        ids = self.tokenize(prompt.encode("utf-8"))
        text = ""
        for _ in range(max_tokens):
            scores = np.full(len(self.vocab), self.UNLIKELY, dtype=np.float32)
            for token, logit in self.logits.get(text, {EOS: 10.0}).items():
                scores[self.ids[token]] = logit
            for processor in processors:
                scores = processor(np.asarray(ids), scores)
            token_id = int(np.argmax(scores))
            if token_id in self.end_tokens:
                return
            piece = self.vocab[token_id]
            cuts = [i for s in stop if (i := (text + piece).find(s)) >= 0]
            if cuts:
                if min(cuts) > len(text):
                    yield (text + piece)[len(text) : min(cuts)]
                return
            ids.append(token_id)
            text += piece
            yield piece
