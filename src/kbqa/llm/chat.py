"""One shared llama.cpp ``Llama`` wrapped as a LangChain chat model.

Wrapping it as a ``BaseChatModel`` lets LangGraph's ``messages`` stream mode and LangSmith
tracing see every LLM call and its tokens. The ``Llama`` instance is loaded once and guarded by
a lock: llama.cpp contexts are not safe to use from two threads at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from kbqa.errors import ModelError
from kbqa.interrupts import deferred_interrupt
from kbqa.llm import llama_compat
from kbqa.llm.cache import names_gguf_file
from kbqa.llm.grounding import SpanConstraint
from kbqa.llm.threshold import AbstentionThreshold, PhraseTokens, core, phrase_tokens
from kbqa.prompts.answer import prompt_text
from kbqa.prompts.budget import count_prompt_tokens

_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
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


def open_llama(
    path: str | Path,
    *,
    n_ctx: int,
    n_threads: int | None = None,
    lora_path: str | Path | None = None,
) -> Any:
    """A ``llama_cpp.Llama`` for a GGUF file, with a LoRA adapter GGUF applied when given,
    quiet on stderr, with kbqa's tokenizer fix for long Bangla tokens (``llama_compat``).

    Raises:
        ModelError: llama-cpp-python is not installed, or the file or adapter does not load.
    """
    try:
        from llama_cpp import Llama
    except ImportError:
        raise ModelError(
            "llama-cpp-python is not installed: pip install llama-cpp-python"
        ) from None
    llama_compat.install()  # long Bangla tokens must not vanish from the answer
    try:
        # llama.cpp prints context notes to stderr even when not verbose; keep the CLI quiet.
        # llama.cpp calls back into Python (its log callback) while it loads a model; a
        # KeyboardInterrupt raised inside a ctypes callback is printed and discarded
        with deferred_interrupt(), quiet_stderr():
            return Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_batch=512,
                verbose=False,
                seed=0,
                lora_path=str(lora_path) if lora_path else None,
            )
    except (ValueError, RuntimeError) as exc:
        extra = f" with adapter {lora_path}" if lora_path else ""
        raise ModelError(f"could not load GGUF {path}{extra}: {exc}") from None


class LlamaCppChatModel(BaseChatModel):
    """Chat model over a shared ``llama_cpp.Llama``.

    ``prompt_style="completion"`` (and ``"tuned"``, a fine-tuned reader's prompt) joins the
    message contents into one plain-text prompt (:func:`kbqa.prompts.answer.prompt_text`; for
    base models such as Gemma 3 270M, which have no chat template); ``"chatml"`` uses the GGUF's
    own chat template through ``create_chat_completion``. Decoding is greedy (temperature 0).
    ``adapter`` names the LoRA GGUF llama.cpp applied at load time ("" for none).

    A call may pass ``grounding=[passage texts]`` (with ``fixed=[allowed whole answers]``): the
    reply is then constrained to spans of those texts (:class:`~kbqa.llm.grounding.
    SpanConstraint`); and ``abstention_threshold=t`` with ``abstention_phrase=...``: the reply
    is the phrase when the reader's probability of beginning it (any tokenisation, after any
    lead-in of whitespace or punctuation, or ending before a word) is >= t, and otherwise can
    neither begin it nor end before a word (:class:`~kbqa.llm.threshold.AbstentionThreshold`;
    the probability is returned in ``response_metadata["abstention_probability"]``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str
    prompt_style: str = "completion"
    n_ctx: int = 4096
    max_tokens: int = 48
    adapter: str = ""
    reader_abstention_threshold: float = 0.0
    """The reader's own abstention threshold (its adapter manifest's ``serving``
    section); a call's ``abstention_threshold=`` keyword overrides it."""

    _llama: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _eog: list[int] | None = PrivateAttr(default=None)
    _threshold: AbstentionThreshold | None = PrivateAttr(default=None)
    _phrase_tokens: dict[tuple[str, ...], PhraseTokens] = PrivateAttr(default_factory=dict)

    @classmethod
    def from_path(
        cls,
        path: str | Path,
        *,
        model_name: str,
        prompt_style: str,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        lora_path: str | Path | None = None,
        abstention_threshold: float = 0.0,
    ) -> LlamaCppChatModel:
        """Load a GGUF file with llama.cpp, with a LoRA adapter GGUF applied when given.

        Raises:
            ModelError: llama-cpp-python is not installed, or the file or adapter does not load.
        """
        llama = open_llama(path, n_ctx=n_ctx, n_threads=n_threads, lora_path=lora_path)
        # a model named by its file (in any spelling: `./m.gguf`, `m//M.GGUF`), not a registered
        # one, gets the prompt its own metadata implies (a helper's finding: the style depended
        # on how the path was written)
        if names_gguf_file(model_name) and not lora_path:
            has_template = bool(llama.metadata.get("tokenizer.chat_template"))
            prompt_style = "chatml" if has_template else "completion"
        model = cls(
            model_name=model_name,
            prompt_style=prompt_style,
            n_ctx=n_ctx,
            adapter=str(lora_path or ""),
            reader_abstention_threshold=abstention_threshold,
        )
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
            "adapter": self.adapter,
        }

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer (no BOS)."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """Prompt tokens for ``messages``, including chat-template overhead
        (:func:`kbqa.prompts.budget.count_prompt_tokens`)."""
        return count_prompt_tokens(messages, self.prompt_style, self.get_num_tokens)

    def _chat_messages(self, messages: list[BaseMessage]) -> list[dict[str, str]]:
        return [{"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages]

    def _call(
        self, messages: list[BaseMessage], stop: list[str] | None, stream: bool, **kw: Any
    ) -> Any:
        params: dict[str, Any] = {
            "max_tokens": kw.get("max_tokens", self.max_tokens),
            "temperature": 0.0,
            "top_k": 1,
            "stop": stop or [],
            "stream": stream,
        }
        self._forget_previous_prompt()
        if self.prompt_style == "chatml":
            return self._llama.create_chat_completion(
                messages=self._chat_messages(messages), **params
            )
        prompt = prompt_text(messages)
        processors: list[Any] = []
        if kw.get("abstention_threshold"):
            self._threshold = self.abstention_threshold(prompt, kw, stop or [])
            processors.append(self._threshold)
        if kw.get("grounding"):
            processors.append(self.span_constraint(prompt, kw["grounding"], kw))
        if processors:
            params["logits_processor"] = processors
        return self._llama.create_completion(prompt, **params)

    def _forget_previous_prompt(self) -> None:
        """Evaluate the next prompt whole. llama-cpp-python reuses the key-value cache of the
        longest prefix the next prompt shares with the last one; a prefix evaluated in other
        batches gives slightly different logits, so near-tied greedy choices could flip and the
        same question could get another answer depending on the question asked before it."""
        self._llama.reset()

    def _prompt_tokens(self, prompt: str) -> int:
        return len(self._llama.tokenize(prompt.encode("utf-8"), add_bos=True, special=True))

    def abstention_threshold(
        self, prompt: str, kw: dict[str, Any], stop: Sequence[str] = ()
    ) -> AbstentionThreshold:
        """The abstention rule for a call with ``abstention_threshold=t`` and
        ``abstention_phrase=...`` and stop sequences ``stop`` (the vocabulary is classified once
        per phrase and stop sequences)."""
        phrase = str(kw.get("abstention_phrase", ""))
        llama = self._llama
        key = (phrase, *stop)
        if key not in self._phrase_tokens:
            self._phrase_tokens[key] = phrase_tokens(
                lambda t: llama.detokenize([t]), llama.n_vocab(), phrase, stop
            )
        return AbstentionThreshold(
            self._phrase_tokens[key],
            float(kw["abstention_threshold"]),
            self._prompt_tokens(prompt),
            lambda t: llama.detokenize([t]),
            self._end_tokens(),
        )

    def span_constraint(self, prompt: str, texts: list[str], kw: dict[str, Any]) -> SpanConstraint:
        """The logits processor that keeps a plain-text reply inside ``texts``."""
        llama = self._llama
        return SpanConstraint(
            lambda t: llama.detokenize([t]),
            texts,
            kw.get("fixed", []),
            prompt_tokens=self._prompt_tokens(prompt),
            end_tokens=self._end_tokens(),
        )

    def _end_tokens(self) -> list[int]:
        """End-of-generation token ids of the vocabulary (found once)."""
        if self._eog is None and hasattr(self._llama, "end_tokens"):  # a stand-in (fake.py)
            self._eog = list(self._llama.end_tokens)
        if self._eog is None:
            import llama_cpp

            vocab = llama_cpp.llama_model_get_vocab(self._llama.model)
            self._eog = [
                t for t in range(self._llama.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)
            ]
        return self._eog

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            self._threshold = None
            out = self._call(messages, stop, stream=False, **kwargs)
            probability = self._threshold.probability if self._threshold else None
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
                "abstention_probability": probability,
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
        with self._lock:
            self._threshold = None
            parts = self._call(messages, stop, stream=True, **kwargs)
            yield from stream_chunks(
                (
                    c.get("delta", {}).get("content") if "delta" in c else c.get("text")
                    for c in (part["choices"][0] for part in parts)
                ),
                run_manager,
                lambda: self._threshold.probability if self._threshold else None,
            )


def stream_chunks(
    pieces: Iterable[str | None],
    run_manager: CallbackManagerForLLMRun | None,
    abstention_probability: Callable[[], float | None] = lambda: None,
) -> Iterator[ChatGenerationChunk]:
    """A chat model's stream from its text pieces: empty pieces skipped, each piece reported to
    the callbacks (LangGraph's ``messages`` stream mode reads them), and one empty chunk when
    nothing came (the first token was a stop sequence: an empty answer, not an error).

    One chunk's ``response_metadata["abstention_probability"]`` is ``abstention_probability()``,
    read once it is decided: with the first piece that holds more than whitespace and
    punctuation (the reply has begun, :func:`~kbqa.llm.threshold.core`), or with an empty last
    chunk when none did. It is the probability of beginning the abstention phrase
    (:class:`~kbqa.llm.threshold.AbstentionThreshold`), ``None`` without a threshold."""
    text, told = b"", False
    for piece in pieces:
        if not piece:
            continue
        text += piece.encode("utf-8")
        meta = {}
        if not told and core(text):
            meta, told = {"abstention_probability": abstention_probability()}, True
        chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece, response_metadata=meta))
        if run_manager is not None:
            run_manager.on_llm_new_token(piece, chunk=chunk)
        yield chunk
    if not told:
        meta = {"abstention_probability": abstention_probability()}
        yield ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=meta))
