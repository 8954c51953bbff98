"""One shared llama.cpp ``Llama`` wrapped as a LangChain chat model.

Wrapping it as a ``BaseChatModel`` lets LangGraph's ``messages`` stream mode and LangSmith
tracing see every LLM call and its tokens. The ``Llama`` instance is loaded once and guarded by
a lock: llama.cpp contexts are not safe to use from two threads at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from kbqa.errors import ModelError

_ROLES = {"system": "system", "human": "user", "ai": "assistant"}
CHAT_OVERHEAD_TOKENS = 8
"""Template tokens per message assumed when budgeting ChatML prompts (``<|im_start|>role``)."""


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null for the duration (llama.cpp writes to it from C)."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class LlamaCppChatModel(BaseChatModel):
    """Chat model over a shared ``llama_cpp.Llama``.

    ``prompt_style="completion"`` joins the message contents into one plain-text prompt (for base
    models such as Gemma 3 270M, which have no chat template); ``"chatml"`` uses the GGUF's own
    chat template through ``create_chat_completion``. Decoding is greedy (temperature 0).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str
    prompt_style: str = "completion"
    n_ctx: int = 4096
    max_tokens: int = 48

    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        model_name: str,
        prompt_style: str,
        n_ctx: int = 4096,
        n_threads: int | None = None,
    ) -> LlamaCppChatModel:
        """Load a GGUF file with llama.cpp.

        Raises:
            ModelError: llama-cpp-python is not installed or the file does not load.
        """
        try:
            from llama_cpp import Llama
        except ImportError:
            raise ModelError(
                "llama-cpp-python is not installed: pip install llama-cpp-python"
            ) from None
        try:
            # llama.cpp prints context notes to stderr even when not verbose; keep the CLI quiet.
            with _quiet_stderr():
                llama = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=n_threads,
                    n_batch=512,
                    verbose=False,
                    seed=0,
                )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"could not load GGUF {path}: {exc}") from None
        if str(path).endswith(".gguf") and model_name == str(path):
            has_template = bool(llama.metadata.get("tokenizer.chat_template"))
            prompt_style = "chatml" if has_template else "completion"
        model = cls(model_name=model_name, prompt_style=prompt_style, n_ctx=n_ctx)
        model._llama = llama
        return model

    @property
    def _llm_type(self) -> str:
        return "llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "prompt_style": self.prompt_style,
            "n_ctx": self.n_ctx,
        }

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer (no BOS)."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """Prompt tokens for ``messages``, including chat-template overhead."""
        body = sum(self.get_num_tokens(str(m.content)) for m in messages)
        overhead = CHAT_OVERHEAD_TOKENS * len(messages) if self.prompt_style == "chatml" else 2
        return body + overhead

    def _completion_prompt(self, messages: list[BaseMessage]) -> str:
        return "\n\n".join(str(m.content) for m in messages)

    def _chat_messages(self, messages: list[BaseMessage]) -> list[dict[str, str]]:
        return [{"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages]

    def _call(
        self, messages: list[BaseMessage], stop: list[str] | None, stream: bool, **kw: Any
    ) -> Any:
        params = {
            "max_tokens": kw.get("max_tokens", self.max_tokens),
            "temperature": 0.0,
            "top_k": 1,
            "stop": stop or [],
            "stream": stream,
        }
        if self.prompt_style == "chatml":
            return self._llama.create_chat_completion(
                messages=self._chat_messages(messages), **params
            )
        return self._llama.create_completion(self._completion_prompt(messages), **params)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            out = self._call(messages, stop, stream=False, **kwargs)
        choice = out["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        usage = out.get("usage", {})
        message = AIMessage(
            content=text or "",
            usage_metadata={
                "input_tokens": usage.get("prompt_tokens", 0),
                "output_tokens": usage.get("completion_tokens", 0),
                "total_tokens": usage.get("total_tokens", 0),
            },
            response_metadata={
                "model_name": self.model_name,
                "finish_reason": choice.get("finish_reason"),
            },
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        produced = False
        with self._lock:
            for part in self._call(messages, stop, stream=True, **kwargs):
                choice = part["choices"][0]
                delta = (
                    choice.get("delta", {}).get("content")
                    if "delta" in choice
                    else choice.get("text")
                )
                if not delta:
                    continue
                produced = True
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                if run_manager is not None:
                    run_manager.on_llm_new_token(delta, chunk=chunk)
                yield chunk
        if not produced:  # the first token was a stop sequence: an empty answer, not an error
            yield ChatGenerationChunk(message=AIMessageChunk(content=""))
