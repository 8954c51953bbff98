"""Deterministic scripted chat models for tests (no model file, no llama.cpp).

Names: ``fake/abstain`` always returns the abstention phrase; ``fake/first-sentence`` answers
with the first words of the first context passage; ``fake/script:<a>|<b>|...`` returns the given
answers in turn (then repeats the last; a trailing ``#tag`` only makes the name, and so the
cached instance, unique); ``fake/slow:<seconds>`` sleeps that long, then answers
like ``fake/first-sentence`` (for interrupting runs in tests); ``fake/fail`` raises at every call
(a model crashing at run time).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

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
            return cls(model_name=name, mode="script", script=answers.split("|"), n_ctx=n_ctx)
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
            text = self.script[min(self._calls - 1, len(self.script) - 1)]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The scripted answer a word at a time (each word with the spaces after it)."""
        text = str(self._generate(messages, stop, run_manager, **kwargs).generations[0].text)
        for piece in re.findall(r"\S+\s*|\s+", text):
            self._streamed += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
