"""The reader and verifier behind an OpenAI-compatible server (llama.cpp's server, vLLM,
``python -m llama_cpp.server``), through LangChain's ``langchain-openai``.

kbqa still knows which model the server runs: ``--model`` (default ``gemma3-270m-reader``)
gives the prompt style, the abstention threshold of its adapter, and the tokenizer, read from
the local GGUF's vocabulary alone (``vocab_only``: no weights are loaded). The server must serve
that model (with the same adapter); ``--llm-model`` is the name the server knows it by.

- A chat-template model (``chatml`` prompt style, e.g. Qwen2.5 Instruct) is called through
  ``ChatOpenAI`` (``/v1/chat/completions``).
- A plain-text reader (``completion`` and ``tuned`` styles: Gemma 3 270M base and kbqa's tuned
  reader, which have no chat template) is called through ``langchain_openai.OpenAI``
  (``/v1/completions``) with the very prompt text served in process: a chat endpoint would wrap
  it in a template the reader was not trained on.

Decoding is greedy as in process (temperature 0, ``top_k`` 1, no repetition penalty: the
llama.cpp server's default penalty is 1.1). Stop sequences and the token budget pass through.
The abstention rule of a tuned reader (:class:`~kbqa.llm.threshold.AbstentionThreshold`, a
logits processor in process) is carried out in requests of one token: each gives the top
:data:`TOP_LOGPROBS` log-probabilities, over which the probability of beginning the abstention
phrase (or of ending the reply before a word) is summed. At or above the threshold the reply is
the phrase. Below it, the reply's first token is the server's greedy one, asked again with
every such token banned by ``logit_bias`` when it was one of them; a first token of whitespace
or punctuation (a lone ``▁``) is a lead-in, after which the decision is taken again, as in
process. The rest of the reply is generated from the prompt plus that beginning, so the ban
covers the reply's start only (the beginning is sent as text: the server tokenises it again).
The span constraint (``--grounding constrained``) also needs a logits processor inside the server,
so a served reader grounds its answer afterwards (``snap``; measured within one question in 45
of ``constrained`` in docs/finetune.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict, PrivateAttr

from kbqa.errors import KBQAError, ModelError
from kbqa.llm.chat import stream_chunks
from kbqa.llm.deadline import DeadlineTransport
from kbqa.llm.endpoint import check_llm_url, served_models
from kbqa.llm.threshold import PhraseTokens, begins, core, ends_empty, phrase_tokens
from kbqa.prompts.answer import PLAIN_STYLES, prompt_text
from kbqa.prompts.budget import count_prompt_tokens

TOP_LOGPROBS = 20
"""Log-probabilities asked for the first token (the OpenAI API's most for chat; the phrase's
probability is summed over those of them that begin it)."""
MAX_LEAD_IN = 3
"""Lead-in tokens (whitespace, punctuation) after which the abstention decision is taken
anyway: each costs one request."""
GREEDY = {"top_k": 1, "repeat_penalty": 1.0}
"""Sampling fields beyond the OpenAI API (llama.cpp's; vLLM reads ``top_k`` and ignores the
other) that make the server decode as kbqa does in process."""


class ServerChatModel(BaseChatModel):
    """A chat model whose calls go to an OpenAI-compatible server.

    Built by :func:`load_server_chat_model`. Accepts the keywords :class:`~kbqa.llm.chat.
    LlamaCppChatModel` does (``max_tokens``, ``abstention_threshold``, ``abstention_phrase``);
    ``grounding`` is ignored (see the module's docstring).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str
    """kbqa's name of the model the server runs (for the prompt style and tokenizer)."""
    base_url: str
    served_name: str
    prompt_style: str = "completion"
    n_ctx: int = 4096
    max_tokens: int = 48
    reader_abstention_threshold: float = 0.0
    timeout: float = 300.0

    _vocab: Any = PrivateAttr(default=None)
    _client: Any = PrivateAttr(default=None)
    _phrase_tokens: dict[tuple[str, ...], PhraseTokens] = PrivateAttr(default_factory=dict)

    @property
    def _llm_type(self) -> str:
        return "openai-compatible-server"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.served_name, "style": self.prompt_style}

    def get_num_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the served model's tokenizer (the local GGUF's vocabulary)."""
        return len(self._vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def get_num_tokens_from_messages(
        self, messages: list[BaseMessage], tools: Sequence[Any] | None = None
    ) -> int:
        """Prompt tokens for ``messages`` (:func:`kbqa.prompts.budget.count_prompt_tokens`)."""
        return count_prompt_tokens(messages, self.prompt_style, self.get_num_tokens)

    def phrase_tokens(self, phrase: str, stop: Sequence[str] = ()) -> PhraseTokens:
        """The local vocabulary classified for ``phrase`` and ``stop`` (:func:`~kbqa.llm.
        threshold.phrase_tokens`; cached)."""
        key = (phrase, *stop)
        if key not in self._phrase_tokens:
            vocab = self._vocab
            self._phrase_tokens[key] = phrase_tokens(
                lambda t: vocab.detokenize([t]), vocab.n_vocab(), phrase, stop
            )
        return self._phrase_tokens[key]

    def _threshold(self, kw: dict[str, Any]) -> float:
        if not kw.get("abstention_phrase"):
            return 0.0
        return float(kw.get("abstention_threshold") or 0.0)

    def _one_token(
        self, prompt: str, stop: list[str] | None, **extra: Any
    ) -> tuple[str, str, dict[str, float]]:
        """The server's greedy next token for ``prompt``: ``(text, finish_reason, {token text:
        probability})`` over the top :data:`TOP_LOGPROBS`.

        Raises:
            ModelError: The server refuses log-probabilities or returns none.
        """
        fix = (
            "the abstention threshold needs them: start llama_cpp.server with --logits_all "
            "true (its default), or pass --abstention-threshold 0 to read without it"
        )
        try:
            result = self._client.generate(
                [prompt],
                stop=stop,
                max_tokens=1,
                logprobs=TOP_LOGPROBS,
                extra_body=GREEDY,
                **extra,
            )
        except Exception as exc:
            raise ModelError(
                f"the server at {self.base_url} failed a request for log-probabilities "
                f"({type(exc).__name__}: {exc}); if it answers other requests, {fix}"
            ) from exc
        generation = result.generations[0][0]
        info = generation.generation_info or {}
        top = ((info.get("logprobs") or {}).get("top_logprobs") or [{}])[0] or {}
        if not top:
            raise ModelError(f"the server at {self.base_url} returned no log-probabilities; {fix}")
        probs = {text: math.exp(lp) for text, lp in top.items()}
        return str(generation.text), str(info.get("finish_reason") or ""), probs

    def _begin(
        self, prompt: str, phrase: str, threshold: float, stop: list[str] | None
    ) -> tuple[float, str | None, bool, int]:
        """Decide how the reply begins, as :class:`~kbqa.llm.threshold.AbstentionThreshold`
        does in process: a token counts when it begins the phrase or ends the reply before it
        holds a word (the end of generation, ``""`` among the log-probabilities, or a stop
        sequence); below the threshold, a greedy token of either kind is asked again with all
        such tokens banned.

        Returns:
            ``(probability, beginning, ended, tokens)``: the probability of beginning the phrase;
            the reply's first tokens as text, or ``None`` when the reply is the phrase; whether
            the reply ended there; and how many tokens those were.
        """
        target = core(phrase.encode("utf-8"))
        stops = [s.encode("utf-8") for s in stop or [] if s]

        def abstains(begun: bytes, text: str) -> bool:
            piece = text.encode("utf-8")
            return begins(core(piece), target) or not piece or ends_empty(begun, piece, stops)

        probability, path, begun, step = 0.0, 1.0, "", 0
        while True:
            step += 1
            so_far = begun.encode("utf-8")
            text, finish, probs = self._one_token(prompt + begun, stop)
            probability += path * sum(p for t, p in probs.items() if abstains(so_far, t))
            if threshold < 1.0 and probability >= threshold:
                return probability, None, False, step
            ends = finish == "stop" and not core((begun + text).encode("utf-8"))
            if ends or begins(core(text.encode("utf-8")), target):  # ask again, those banned
                ban = self._ban(phrase, stop)
                text, finish, _ = self._one_token(prompt + begun, stop, logit_bias=ban)
            if not text and finish != "stop":  # a cut-off character: the server goes on from here
                return probability, begun, False, step - 1
            begun += text
            if finish == "stop":
                return probability, begun, True, step
            if core(begun.encode("utf-8")) or step > MAX_LEAD_IN:
                return probability, begun, False, step
            path *= probs.get(text, 0.0)  # a lead-in: the decision is taken again after it

    def _ban(self, phrase: str, stop: list[str] | None) -> dict[str, int]:
        """``logit_bias`` that bans every token that begins ``phrase``, holds a stop sequence or
        ends generation."""
        tokens = self.phrase_tokens(phrase, stop or [])
        eos = [self._vocab.token_eos()] if hasattr(self._vocab, "token_eos") else []
        ids = {*map(int, tokens.starts), *map(int, tokens.stopping), *eos}
        return {str(t): -100 for t in sorted(ids)}

    def _pieces(
        self, messages: list[BaseMessage], stop: list[str] | None, kw: dict[str, Any]
    ) -> Iterator[tuple[str, float | None]]:
        """The reply as ``(text, abstention_probability)`` pieces, streamed.

        Raises:
            ModelError: The server failed: an HTTP error, a timeout, a reply that is not the
                OpenAI API's JSON (a ``ValueError`` from the client would otherwise read as a
                prompt that does not fit, which is the caller's to fix).
        """
        try:
            yield from self._served_pieces(messages, stop, kw)
        except KBQAError:
            raise
        except Exception as exc:
            why = str(exc)
            if "Timeout" in type(exc).__name__:  # httpx's, or the OpenAI client's wrapper of it
                why = f"no whole reply within the --llm-timeout of {self.timeout:g} s"
            raise ModelError(
                f"the server at {self.base_url} failed: {type(exc).__name__}: {why}"
            ) from exc

    def _served_pieces(
        self, messages: list[BaseMessage], stop: list[str] | None, kw: dict[str, Any]
    ) -> Iterator[tuple[str, float | None]]:
        max_tokens = int(kw.get("max_tokens", self.max_tokens))
        if self.prompt_style not in PLAIN_STYLES:
            for chunk in self._client.stream(
                messages, stop=stop, max_tokens=max_tokens, extra_body=GREEDY
            ):
                yield str(chunk.content), None
            return
        prompt = prompt_text(messages)
        threshold = self._threshold(kw)
        probability = None
        if threshold:
            phrase = str(kw["abstention_phrase"])
            probability, begun, ended, used = self._begin(prompt, phrase, threshold, stop)
            if begun is None:
                yield phrase, probability
                return
            yield begun, probability
            if ended or used >= max_tokens:
                return
            prompt, max_tokens = prompt + begun, max_tokens - used
        for text in self._client.stream(
            prompt, stop=stop, max_tokens=max_tokens, extra_body=GREEDY
        ):
            yield str(text), probability

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        pieces = list(self._pieces(messages, stop, kwargs))
        text = "".join(piece for piece, _ in pieces)
        probability = pieces[-1][1] if pieces else None
        message = AIMessage(
            content=text,
            response_metadata={
                "model_name": self.model_name,
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
        probability: list[float | None] = [None]

        def texts() -> Iterator[str]:
            for text, probability[0] in self._pieces(messages, stop, kwargs):
                yield text

        yield from stream_chunks(texts(), run_manager, lambda: probability[0])


@functools.cache
def load_server_chat_model(
    url: str,
    served_name: str,
    name: str,
    adapter: str = "",
    n_ctx: int = 4096,
    timeout: float = 300.0,
    role: str = "reader",
) -> ServerChatModel:
    """A :class:`ServerChatModel` for kbqa model ``name`` (with ``adapter``) served at ``url``
    as ``served_name`` ("": the server's first listed model). Cached per arguments. One call
    fails after ``timeout`` seconds, and is not retried (a hung server costs one timeout).
    ``role`` (``reader`` or ``verifier``) is the role ``adapter`` must be able to serve
    (:func:`kbqa.llm.models.check_role`).

    Raises:
        ModelError: ``langchain-openai`` is not installed (``pip install 'kbqa[server]'``), the
            server cannot be reached, does not serve ``served_name``, or ``name`` is not a model
            kbqa can read the tokenizer of (see :func:`kbqa.llm.models.resolve_model`).
    """
    try:
        from langchain_openai import ChatOpenAI, OpenAI
    except ImportError:
        raise ModelError("--llm-url needs langchain-openai: pip install 'kbqa[server]'") from None
    from kbqa.llm.models import resolve_adapter, resolve_model, serving_threshold

    check_llm_url(url)
    listed = served_models(url, timeout=timeout)
    served = served_name or (listed[0] if listed else "")
    if served not in listed:
        raise ModelError(
            f"the LLM server at {url} serves {', '.join(listed) or 'no model'}, not {served!r}"
            " (--llm-model)"
        )
    path, style = resolve_model(name)
    lora = resolve_adapter(name, adapter, role)
    threshold = 0.0
    if lora is not None:
        style, threshold = lora[1], serving_threshold(lora[0])
    model = ServerChatModel(
        model_name=name,
        base_url=url,
        served_name=served,
        prompt_style=style,
        n_ctx=n_ctx,
        reader_abstention_threshold=threshold,
        timeout=timeout,
    )
    from llama_cpp import Llama

    from kbqa.llm import llama_compat
    from kbqa.llm.chat import quiet_stderr

    llama_compat.install()  # tokens over 32 bytes must not read as empty
    with quiet_stderr():
        model._vocab = Llama(model_path=str(path), vocab_only=True, verbose=False)
    common: dict[str, Any] = {
        "base_url": url,
        "model": served,
        "api_key": "not-needed",
        "temperature": 0.0,
        "timeout": model.timeout,
        "max_retries": 0,
    }
    # one deadline for the whole request, streaming included: httpx's timeout is per read, and
    # a server that sends keep-alive comments every few seconds would never reach it
    common["http_client"] = httpx.Client(
        transport=DeadlineTransport(model.timeout), timeout=model.timeout
    )
    model._client = OpenAI(**common) if style in PLAIN_STYLES else ChatOpenAI(**common)
    return model
