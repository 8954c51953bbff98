"""Export a trained LoRA adapter for llama.cpp: an adapter GGUF, or a merged GGUF.

Two serving forms (``kbqa finetune reader`` writes the first; :func:`write_merged_gguf` the
second, for comparison):

- a **LoRA GGUF** (:func:`write_lora_gguf`): the adapter alone, applied by llama.cpp on top of the
  unchanged quantised base at load time (``Llama(lora_path=...)``). The layout is the one
  llama.cpp's ``convert_lora_to_gguf.py`` writes: ``general.type = adapter``,
  ``adapter.type = lora``, ``adapter.lora.alpha``, and per adapted weight ``<name>.lora_a``
  (rank x in) and ``<name>.lora_b`` (out x rank), named with gguf-py's tensor map.
- a **merged GGUF**: the base with ``W + (alpha / r) B A`` folded into each adapted weight.

Parity between transformers and llama.cpp is checked in :mod:`kbqa.finetune.parity`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kbqa.errors import InputError
from kbqa.finetune.examples import PROMPT_STYLE
from kbqa.finetune.portable import portable_path
from kbqa.llm.cache import file_sha256
from kbqa.llm.lora import ADAPTER_FILE, KV_BASE_SHA256, KV_PROMPT_STYLE, MANIFEST_FILE
from kbqa.llm.models import MODELS, resolve_model

if TYPE_CHECKING:
    import torch

_PEFT_NAME = re.compile(
    r"^(?:base_model\.model\.)?(?P<base>.+)\.lora_(?P<ab>[AB])(?:\.\w+)?\.weight$"
)


def _gguf_arch(arch: str) -> Any:
    import gguf

    for value in gguf.MODEL_ARCH:
        if gguf.MODEL_ARCH_NAMES[value] == arch:
            return value
    raise ValueError(f"gguf-py knows no architecture {arch!r}")


def lora_tensor_pairs(
    state: Mapping[str, torch.Tensor], arch: str, n_layers: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Map a PEFT adapter state dict onto GGUF tensor names.

    Args:
        state: ``get_peft_model_state_dict`` output (``...q_proj.lora_A.weight`` keys).
        arch: GGUF architecture name (``gemma3``).
        n_layers: Transformer blocks of the base.

    Returns:
        GGUF weight name (``blk.0.attn_q.weight``) -> ``(A, B)`` float32 arrays of shapes
        ``(r, in)`` and ``(out, r)``.

    Raises:
        ValueError: A key that is not a LoRA A/B weight, or a module gguf-py cannot name.
    """
    import gguf

    names = gguf.get_tensor_name_map(_gguf_arch(arch), n_layers)
    parts: dict[str, dict[str, np.ndarray]] = {}
    for key, tensor in state.items():
        m = _PEFT_NAME.match(key)
        if m is None:
            raise ValueError(f"not a LoRA A/B weight: {key}")
        gguf_name = names.get_name(m["base"])
        if gguf_name is None:
            raise ValueError(f"gguf-py has no tensor name for {m['base']!r} ({arch})")
        parts.setdefault(gguf_name + ".weight", {})[m["ab"]] = tensor.detach().float().cpu().numpy()
    out = {}
    for name, ab in parts.items():
        if set(ab) != {"A", "B"}:
            raise ValueError(f"{name}: adapter has only lora_{''.join(ab)}")
        out[name] = (ab["A"], ab["B"])
    return out


def write_lora_gguf(
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    alpha: float,
    out: Path,
    *,
    arch: str,
    metadata: Mapping[str, str] | None = None,
    dtype: str = "f16",
) -> Path:
    """Write a llama.cpp LoRA adapter GGUF.

    Args:
        pairs: From :func:`lora_tensor_pairs`.
        alpha: LoRA alpha (llama.cpp scales by ``alpha / r``, as peft does).
        out: File to write (replaced atomically).
        arch: GGUF architecture name of the base.
        metadata: Extra string keys (``kbqa.base_sha256``...).
        dtype: ``f16`` (half the size; the default) or ``f32``.

    Returns:
        ``out``.
    """
    import gguf

    np_dtype = {"f16": np.float16, "f32": np.float32}[dtype]
    tmp = out.with_name(out.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(alpha))
    for key, value in (metadata or {}).items():
        writer.add_string(key, value)
    for name in sorted(pairs):
        a, b = pairs[name]
        writer.add_tensor(name + ".lora_a", np.ascontiguousarray(a, dtype=np_dtype))
        writer.add_tensor(name + ".lora_b", np.ascontiguousarray(b, dtype=np_dtype))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(out)
    return out


def read_gguf_strings(path: Path, keys: Iterable[str]) -> dict[str, str]:
    """String values of ``keys`` present in a GGUF file's metadata."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    found = {}
    for key in keys:
        field = reader.fields.get(key)
        if field is not None:
            found[key] = str(field.contents())
    return found


def copy_gguf(
    src: Path, dst: Path, transform: Callable[[str, np.ndarray, Any], tuple[np.ndarray, Any]]
) -> Path:
    """Copy a GGUF's metadata and tensors, passing each tensor through ``transform(name, raw
    data, type) -> (data, type)``."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    arch = reader.fields["general.architecture"].contents()
    tmp = dst.with_name(dst.name + ".tmp")
    writer = gguf.GGUFWriter(str(tmp), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), kind, sub_type=field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), kind)
    for t in reader.tensors:
        data, qtype = transform(t.name, t.data, t.tensor_type)
        if qtype == gguf.GGMLQuantizationType.F32:
            shape = tuple(int(x) for x in reversed(t.shape.tolist()))
            writer.add_tensor(t.name, np.asarray(data, dtype=np.float32).reshape(shape))
        else:
            writer.add_tensor(t.name, data, raw_dtype=qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(dst)
    return dst


def write_merged_gguf(
    base: Path,
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    alpha: float,
    dst: Path,
    *,
    qtype: str = "Q8_0",
) -> Path:
    """The base GGUF with the adapter folded in: each adapted weight becomes
    ``dequant(W) + (alpha / r) B A``, stored as ``qtype`` (``Q8_0`` or ``F32``); every other
    tensor is copied unchanged (still Q4_K_M)."""
    import gguf
    from gguf.quants import dequantize, quantize

    target = gguf.GGMLQuantizationType[qtype]

    def merge(name: str, data: np.ndarray, kind: Any) -> tuple[np.ndarray, Any]:
        if name not in pairs:
            return data, kind
        a, b = pairs[name]
        w = dequantize(data, kind).astype(np.float32)
        w = w + (alpha / a.shape[0]) * (b.astype(np.float32) @ a.astype(np.float32))
        if target == gguf.GGMLQuantizationType.F32:
            return w, target
        return quantize(w, target), target

    return copy_gguf(base, dst, merge)


def _base_layout(base_path: Path) -> tuple[str, int]:
    """(architecture, block count) of a base GGUF.

    Raises:
        InputError: ``base_path`` is not a readable base model GGUF.
    """
    try:
        arch = read_gguf_strings(base_path, ["general.architecture"])["general.architecture"]
        blocks = int(read_gguf_strings(base_path, [f"{arch}.block_count"])[f"{arch}.block_count"])
    except Exception as exc:  # gguf-py raises ValueError, KeyError, IndexError...
        raise InputError(
            f"{base_path} is not a readable base model GGUF ({type(exc).__name__}: {exc})"
        ) from None
    return arch, blocks


def _check_lora_state(state: Mapping[str, Any], alpha: float, rank: int | None = None) -> None:
    """Refuse what would serve garbage or crash llama.cpp: a non-finite or non-positive alpha,
    non-finite weights, a rank below 1 or other than ``rank``.

    Raises:
        InputError: Naming the value or tensor.
    """
    import math

    import torch

    if isinstance(alpha, bool) or not math.isfinite(alpha) or alpha <= 0:
        raise InputError(f"lora_alpha must be a finite number > 0, got {alpha!r}")
    for name, tensor in state.items():
        if "lora_A" in name and (tensor.ndim != 2 or tensor.shape[0] < 1):
            raise InputError(f"{name} has rank {tuple(tensor.shape)[:1]}: r must be >= 1")
        if "lora_A" in name and rank is not None and tensor.shape[0] != rank:
            raise InputError(f"{name} has rank {tensor.shape[0]}, but the config says r={rank}")
        if torch.is_floating_point(tensor) and not bool(torch.isfinite(tensor).all()):
            raise InputError(f"{name} holds NaN or infinite weights")


def write_adapter(
    state: dict[str, Any],
    alpha: float,
    base_path: Path,
    base_sha: str,
    out: Path,
    manifest: Callable[[Path], Mapping[str, Any]] | None = None,
) -> Path:
    """Write ``out/adapter.gguf`` (and ``out/manifest.json``) from a peft adapter state dict,
    for the base GGUF at ``base_path`` (its sha256 and the ``tuned`` prompt style go into the
    GGUF's metadata).

    Both files are written beside their final names first; ``manifest(staged_adapter)`` builds
    the manifest then (it may score the staged adapter). Only when both are written does the
    old manifest go, then the adapter and the manifest take their names, so a failure or Ctrl-C
    leaves the previous adapter directory as it was (or no directory, if it did not exist).

    Raises:
        InputError: The state dict is not a LoRA adapter of this base (names, shapes, rank or
            values that do not fit; llama.cpp would crash on it), ``base_path`` is not a base
            GGUF, or a file could not be written (disk full, permissions: the path is named).
    """
    from kbqa.errors import ModelError
    from kbqa.llm.lora import check_adapter_tensors

    arch, blocks = _base_layout(base_path)
    _check_lora_state(state, alpha)
    try:
        pairs = lora_tensor_pairs(state, arch, blocks)
    except ValueError as exc:
        raise InputError(f"not a LoRA adapter of {base_path.name}: {exc}") from None
    created = not out.exists()
    staged = out / f".{ADAPTER_FILE}.staged"
    staged_manifest = out / f".{MANIFEST_FILE}.staged"
    try:
        out.mkdir(parents=True, exist_ok=True)
        meta = {KV_BASE_SHA256: base_sha, KV_PROMPT_STYLE: PROMPT_STYLE}
        write_lora_gguf(pairs, alpha, staged, arch=arch, metadata=meta)
        check_adapter_tensors(staged, base_path)
        if manifest is not None:
            text = json.dumps(dict(manifest(staged)), ensure_ascii=False, indent=1) + "\n"
            staged_manifest.write_text(text, "utf-8")
        (out / MANIFEST_FILE).unlink(missing_ok=True)  # never an old manifest beside a new adapter
        adapter = staged.replace(out / ADAPTER_FILE)
        if manifest is not None:
            staged_manifest.replace(out / MANIFEST_FILE)
        return adapter
    except ModelError as exc:
        raise InputError(f"not a LoRA adapter of {base_path.name}: {exc}") from None
    except OSError as exc:
        raise InputError(f"could not write the adapter to {out}: {exc}") from None
    finally:
        for leftover in (staged, staged_manifest):
            leftover.unlink(missing_ok=True)
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()


ROLES = ("reader", "verifier", "reranker")
"""What an adapter is for (its manifest's ``role``; a reader's manifest may leave it out)."""


def checkpoint_role(checkpoint: Path) -> str:
    """The role of the run a checkpoint belongs to: the ``role`` of the adapter that run
    exported (``OUT/adapter/manifest.json`` beside ``OUT/checkpoints/checkpoint-N``), else
    ``reader``."""
    manifest = checkpoint.parent.parent / "adapter" / "manifest.json"
    try:
        role = json.loads(manifest.read_text("utf-8")).get("role", "reader")
    except (OSError, ValueError, AttributeError):
        return "reader"
    return role if role in ROLES else "reader"


def export_checkpoint(
    checkpoint: Path, out: Path, base_model: str = "gemma3-270m", role: str = ""
) -> Path:
    """Export a training checkpoint (``OUT/checkpoints/checkpoint-N``) as an adapter directory,
    with a manifest naming the checkpoint (its folder name, no machine path), its step, its
    training time and its ``role`` (``role``, or the run's: :func:`checkpoint_role`). The
    manifest has no ``serving`` choice (no validation examples here), so a reader serves with
    greedy decoding unless ``--abstention-threshold`` is given
    (``benchmarks/abstention_curve.py`` measures the choice).

    Raises:
        InputError: ``checkpoint`` holds no peft adapter, its config or ``progress.json`` is
            unreadable or out of range (r a positive integer equal to the tensors' rank,
            lora_alpha finite and > 0), its weights are not finite, ``base_model`` is not a base
            GGUF, ``role`` is not one of :data:`ROLES`, or ``out`` cannot be written. Nothing in
            ``out`` changes then.
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights, config = checkpoint / "adapter_model.safetensors", checkpoint / "adapter_config.json"
    if not weights.is_file() or not config.is_file():
        raise InputError(f"{checkpoint} holds no LoRA adapter (adapter_model.safetensors)")
    role = role or checkpoint_role(checkpoint)
    if role not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, got {role!r}")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file, not a directory")
    try:
        lora_cfg = json.loads(config.read_text("utf-8"))
        alpha, rank = lora_cfg["lora_alpha"], lora_cfg["r"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{config} is not a peft LoRA config with r and lora_alpha ({exc!r})"
        ) from None
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise InputError(f"{config}: r must be a positive integer, got {rank!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float):
        raise InputError(f"{config}: lora_alpha must be a number, got {alpha!r}")
    progress = checkpoint / "progress.json"
    training: dict[str, Any] = {}
    if progress.exists():
        try:
            training = json.loads(progress.read_text("utf-8"))
        except (ValueError, OSError) as exc:
            raise InputError(f"{progress} is not readable JSON: {exc}") from None
    try:
        state = load_file(str(weights))
    except SafetensorError as exc:
        raise InputError(f"{weights} is not a readable safetensors file: {exc}") from None
    _check_lora_state(state, float(alpha), rank)
    base_path, _ = resolve_model(base_model)
    spec = MODELS.get(base_model)
    base_sha = spec.sha256 if spec else file_sha256(base_path)

    def manifest(adapter: Path) -> dict[str, Any]:
        return {
            "name": out.name,
            **({"role": role} if role != "reader" else {}),
            "base_model": portable_path(base_model),  # a name, or a GGUF's file name
            "base_sha256": base_sha,
            "prompt_style": PROMPT_STYLE,
            "checkpoint": checkpoint.resolve().name,
            "lora": {"r": rank, "alpha": float(alpha)},
            "training": training,
            "adapter_sha256": file_sha256(adapter),
        }

    return write_adapter(state, float(alpha), base_path, base_sha, out, manifest)
