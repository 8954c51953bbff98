"""Parity: transformers (what the adapter is trained on) and llama.cpp (what serves it) must
read the same model.

On fixed prompts, transformers' GGUF conversion and llama.cpp must pick the same next token with
close log-probabilities (:func:`check_parity`). On a float32 copy of the base
(:func:`write_float32_gguf`) they agree to about 1e-3; on the Q4_K_M file llama.cpp also
quantises activations to 8 bits, which moves log-probabilities by about 0.2 (median) and flips
near-ties. Figures: ``docs/finetune.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kbqa.finetune.export import copy_gguf

if TYPE_CHECKING:
    pass


def write_float32_gguf(src: Path, dst: Path) -> Path:
    """A copy of ``src`` with every tensor dequantised to float32: what transformers trains on,
    in llama.cpp's format (4x the size of Q4_K_M). Used for the exact parity check."""
    import gguf
    from gguf.quants import dequantize

    def f32(name: str, data: np.ndarray, qtype: Any) -> tuple[np.ndarray, Any]:
        return dequantize(data, qtype).astype(np.float32), gguf.GGMLQuantizationType.F32

    return copy_gguf(src, dst, f32)


@dataclass(frozen=True, slots=True)
class ParityReport:
    """How closely llama.cpp reproduces transformers on the same token ids.

    Attributes:
        positions: Token positions compared (every position of every prompt).
        argmax_agreement: Share of positions where both pick the same next token.
        last_token_agreement: Share of prompts whose next token after the prompt agrees.
        median_abs_logprob_diff: Median |log p_llama - log p_hf| of transformers' top token.
        p95_abs_logprob_diff: Its 95th percentile.
        tokenization_equal: Share of prompts tokenised identically (BOS included).
    """

    positions: int
    argmax_agreement: float
    last_token_agreement: float
    median_abs_logprob_diff: float
    p95_abs_logprob_diff: float
    tokenization_equal: float

    def to_dict(self) -> dict[str, float]:
        """Plain dict for JSON."""
        return asdict(self)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(-1, keepdims=True)
    out: np.ndarray = x - np.log(np.exp(x).sum(-1, keepdims=True))
    return out


def check_parity(
    hf_model: Any,
    tokenizer: Any,
    gguf_path: Path,
    prompts: Sequence[str],
    *,
    lora_path: Path | None = None,
    n_threads: int | None = None,
) -> ParityReport:
    """Compare next-token log-probabilities of a transformers model and llama.cpp.

    Args:
        hf_model: The transformers model (with its adapter, if any).
        tokenizer: Its tokenizer; its ids must equal llama.cpp's (counted in the report).
        gguf_path: The GGUF llama.cpp loads.
        prompts: Texts; each is tokenised with BOS and scored at every position.
        lora_path: A LoRA GGUF llama.cpp applies on top.
        n_threads: llama.cpp threads (None: its default).

    Returns:
        The :class:`ParityReport`.
    """
    import torch
    from llama_cpp import Llama

    from kbqa.llm import llama_compat
    from kbqa.llm.chat import quiet_stderr

    llama_compat.install()
    longest = max(len(tokenizer(p).input_ids) for p in prompts)
    with quiet_stderr():
        llm = Llama(
            model_path=str(gguf_path),
            lora_path=str(lora_path) if lora_path else None,
            n_ctx=max(256, longest + 8),
            n_batch=max(256, longest + 8),
            logits_all=True,
            verbose=False,
            n_threads=n_threads,
        )
    agree, last, diffs, same_tok = [], [], [], []
    try:
        for prompt in prompts:
            hf_ids = tokenizer(prompt).input_ids
            ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            same_tok.append(hf_ids == ids)
            llm.reset()  # type: ignore[no-untyped-call]
            llm.eval(ids)
            lc = np.array(llm.scores[: len(ids)], dtype=np.float64)
            with torch.no_grad():
                lh = hf_model(torch.tensor([ids])).logits[0].double().numpy()
            top = lh.argmax(-1)
            agree.extend((lc.argmax(-1) == top).tolist())
            last.append(bool(lc[-1].argmax() == top[-1]))
            rows = np.arange(len(ids))
            diffs.extend(np.abs(_log_softmax(lc)[rows, top] - _log_softmax(lh)[rows, top]))
    finally:
        llm.close()
    return ParityReport(
        positions=len(agree),
        argmax_agreement=float(np.mean(agree)),
        last_token_agreement=float(np.mean(last)),
        median_abs_logprob_diff=float(np.median(diffs)),
        p95_abs_logprob_diff=float(np.percentile(diffs, 95)),
        tokenization_equal=float(np.mean(same_tok)),
    )
