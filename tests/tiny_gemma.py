"""A tiny randomly initialised Gemma 3 in GGUF form, built in a second: the real model's
tokenizer and metadata with 2 blocks of width 64, for training and export tests that must run
both transformers and llama.cpp on the same weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF = 64, 2, 2, 1, 32, 128
_DIMS = {
    "gemma3.embedding_length": HIDDEN,
    "gemma3.block_count": LAYERS,
    "gemma3.feed_forward_length": FF,
    "gemma3.attention.head_count": HEADS,
    "gemma3.attention.head_count_kv": KV_HEADS,
    "gemma3.attention.key_length": HEAD_DIM,
    "gemma3.attention.value_length": HEAD_DIM,
    "gemma3.context_length": 2048,
}


def tiny_gemma_gguf(template: Path, out: Path, seed: int = 0) -> Path:
    """Write a tiny Gemma 3 GGUF with ``template``'s tokenizer and random float32 weights."""
    import gguf

    reader = gguf.GGUFReader(str(template))
    writer = gguf.GGUFWriter(str(out), "gemma3")
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = field.types[0]
        if key in _DIMS:
            writer.add_key_value(key, _DIMS[key], kind)
        elif kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), kind)
    rng = np.random.default_rng(seed)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)

    def add(name: str, *shape: int, scale: float = 0.08) -> None:
        data = rng.normal(0, scale, size=shape).astype(np.float32)
        if len(shape) == 1:  # norm weights are stored with llama.cpp's +1
            data = 1.0 + data
        writer.add_tensor(name, data)

    add("token_embd.weight", vocab, HIDDEN, scale=0.5)
    add("output_norm.weight", HIDDEN)
    for b in range(LAYERS):
        add(f"blk.{b}.attn_norm.weight", HIDDEN)
        add(f"blk.{b}.attn_q.weight", HEADS * HEAD_DIM, HIDDEN)
        add(f"blk.{b}.attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        add(f"blk.{b}.attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        add(f"blk.{b}.attn_q_norm.weight", HEAD_DIM)
        add(f"blk.{b}.attn_k_norm.weight", HEAD_DIM)
        add(f"blk.{b}.attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
        add(f"blk.{b}.post_attention_norm.weight", HIDDEN)
        add(f"blk.{b}.ffn_norm.weight", HIDDEN)
        add(f"blk.{b}.ffn_gate.weight", FF, HIDDEN)
        add(f"blk.{b}.ffn_up.weight", FF, HIDDEN)
        add(f"blk.{b}.ffn_down.weight", HIDDEN, FF)
        add(f"blk.{b}.post_ffw_norm.weight", HIDDEN)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


class LlamaTokenizer:
    """The slice of a transformers tokenizer the training code uses, backed by llama.cpp's own
    tokenizer (vocabulary only), so a test needs no 262k-entry tokenizer conversion."""

    def __init__(self, gguf_path: Path) -> None:
        from llama_cpp import Llama

        self._llama = Llama(model_path=str(gguf_path), vocab_only=True, verbose=False)
        self.eos_token_id = self._llama.token_eos()
        self.pad_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = True) -> Any:
        ids = self._llama.tokenize(text.encode("utf-8"), add_bos=add_special_tokens, special=True)

        class Encoded:
            input_ids = ids

        return Encoded()
