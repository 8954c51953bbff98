"""The base model for fine-tuning, loaded by transformers straight from its GGUF package.

transformers dequantises a GGUF into float32 weights (``from_pretrained(dir, gguf_file=...)``);
that takes about a minute for Gemma 3 270M here (the 262k-entry tokenizer alone 25 s), so the
converted weights and tokenizer are cached beside the assembled GGUF, keyed by its sha256, and
later loads take seconds. Training on the dequantised weights means the adapter learns against
exactly the numbers llama.cpp serves (see :func:`kbqa.finetune.parity.check_parity`).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbqa.errors import ModelError
from kbqa.llm.cache import file_sha256
from kbqa.llm.models import cache_dir, resolve_model
from kbqa.prompts.budget import count_prompt_tokens

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger("kbqa.finetune")

MARKER = "kbqa-source.json"
"""File in a converted-weights directory naming the GGUF (and its sha256) it came from."""


def base_gguf(model: str) -> Path:
    """The GGUF file of a registered model name or a ``.gguf`` path.

    Raises:
        ModelError: See :func:`kbqa.llm.models.resolve_model`.
    """
    return resolve_model(model)[0]


def converted_dir(gguf_path: Path, sha256: str) -> Path:
    """Where the float32 conversion of ``gguf_path`` is cached."""
    return cache_dir() / "hf" / f"{gguf_path.stem}-{sha256[:12]}"


def load_base(
    gguf_path: Path, *, sha256: str | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load a GGUF as a float32 transformers model and its tokenizer, converting once.

    Args:
        gguf_path: The base model's GGUF file.
        sha256: Its sha256 when already known (else computed: about 1 s per 250 MB).

    Returns:
        ``(model, tokenizer)``; the model is in eval mode on the CPU.

    Raises:
        ModelError: transformers cannot read the file (an architecture it does not convert).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    sha256 = sha256 or file_sha256(gguf_path)
    cached = converted_dir(gguf_path, sha256)
    marker = cached / MARKER
    if marker.is_file() and json.loads(marker.read_text())["sha256"] == sha256:
        tokenizer = AutoTokenizer.from_pretrained(cached)
        model: Any = AutoModelForCausalLM.from_pretrained(cached, dtype=torch.float32)
        return model.eval(), tokenizer
    log.info("converting %s to float32 weights once (about a minute)", gguf_path.name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
        )
    except (ValueError, KeyError, OSError) as exc:
        raise ModelError(f"transformers cannot load {gguf_path}: {exc}") from None
    model = plain_float_model(model)
    _save_converted(model, tokenizer, cached, {"gguf": gguf_path.name, "sha256": sha256})
    return model.eval(), tokenizer


def plain_float_model(model: PreTrainedModel) -> PreTrainedModel:
    """Make a GGUF-loaded model forget its quantisation: its weights are already dequantised
    float tensors, but while it remembers the GGUF config ``save_pretrained`` and ``Trainer``
    refuse it."""
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and getattr(config, "_is_quantized", False):
            config._is_quantized = False
    return model


def _save_converted(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out: Path, source: dict[str, Any]
) -> None:
    """Write the converted model atomically (a temporary directory renamed into place)."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / MARKER).write_text(json.dumps(source))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


class TokenizerCounter:
    """Counts prompt tokens with a transformers tokenizer exactly as
    :class:`kbqa.llm.chat.LlamaCppChatModel` counts them with llama.cpp's (the two tokenisers
    agree: see :func:`kbqa.finetune.parity.check_parity`), so :func:`kbqa.prompts.budget.
    fit_prompt` keeps the same passages in training as in serving.

    Args:
        tokenizer: The base model's tokenizer.
        style: The prompt style being counted.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, style: str) -> None:
        self.tokenizer = tokenizer
        self.style = style

    def count(self, text: str) -> int:
        """Tokens of ``text`` without BOS."""
        return len(self.tokenizer(text, add_special_tokens=False).input_ids)

    def get_num_tokens_from_messages(self, messages: list[BaseMessage]) -> int:
        """Prompt tokens, template overhead included."""
        return count_prompt_tokens(messages, self.style, self.count)
