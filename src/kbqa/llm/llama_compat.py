"""A fix for llama-cpp-python's detokenizer, installed before kbqa uses llama.cpp.

``llama_cpp._internals.LlamaModel.detokenize`` (0.3.x, up to at least 0.3.36) gives
``llama_token_to_piece`` a 32-byte buffer and ignores its "too small" answer (a negative
length), so every token whose text is longer than 32 bytes comes back empty
(abetlen/llama-cpp-python#2362; fix proposed in #2363). A Bangla character is 3 bytes in UTF-8,
so Gemma's whole-word tokens such as ``▁প্রধানমন্ত্রী`` (42 bytes) or ``▁আন্তর্জাতিক`` vanished
from generated answers, silently. :func:`install` replaces the two methods with versions that
retry with a buffer of the size llama.cpp asks for; the rest of their behaviour (BOS space rule,
``special``) is kept.
"""

from __future__ import annotations

import ctypes
from typing import Any

_INSTALLED = False
FIRST_BUFFER = 64
"""Bytes tried first; a longer piece is fetched again with the size llama.cpp reports."""


def token_piece(vocab: Any, token: int, special: bool = False) -> bytes:
    """The text of one token as bytes, however long.

    Args:
        vocab: A ``llama_vocab`` pointer (``llama_cpp.llama_model_get_vocab(model)``).
        token: Token id.
        special: Render special tokens (``<eos>``) as text.
    """
    import llama_cpp

    size = FIRST_BUFFER
    for _ in range(2):
        buffer = (ctypes.c_char * size)()
        n = llama_cpp.llama_token_to_piece(
            vocab, llama_cpp.llama_token(token), buffer, size, 0, special
        )
        if n >= 0:
            return buffer.raw[:n]
        size = -n  # llama.cpp answers -(bytes needed) when the buffer is too small
    raise RuntimeError(f"llama_token_to_piece kept asking for a larger buffer for token {token}")


def install() -> None:
    """Patch ``LlamaModel.token_to_piece`` and ``LlamaModel.detokenize`` (once per process)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from llama_cpp import _internals

    def piece(self: Any, token: int, special: bool = False) -> bytes:
        return token_piece(self.vocab, token, special)

    def detokenize(self: Any, tokens: list[int], special: bool = False) -> bytes:
        output = b"".join(token_piece(self.vocab, t, special) for t in tokens)
        # as upstream: a leading space after BOS is dropped (Llama 1 added one)
        if tokens and tokens[0] == self.token_bos() and output[:1] == b" ":
            return output[1:]
        return output

    _internals.LlamaModel.token_to_piece = piece  # type: ignore[method-assign]
    _internals.LlamaModel.detokenize = detokenize  # type: ignore[method-assign]
    _INSTALLED = True
