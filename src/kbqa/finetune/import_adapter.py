"""An exported adapter read back for training: the inverse of :mod:`kbqa.finetune.export`, so
``kbqa finetune ... --init-adapter`` can start from an ``adapter.gguf`` (the shipped reader
keeps no peft checkpoint). The GGUF's ``<name>.lora_a`` / ``.lora_b`` pairs are mapped back
onto a peft model's own state-dict keys with gguf-py's tensor map, as the export mapped them
out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from kbqa.errors import InputError
from kbqa.finetune.export import _PEFT_NAME, _gguf_arch
from kbqa.llm.lora import ADAPTER_FILE


def exported_adapter_file(path: Path) -> Path | None:
    """The adapter GGUF that ``path`` names when it is an exported adapter (a path ending in
    ``.gguf``, there or not, or a folder holding :data:`~kbqa.llm.lora.ADAPTER_FILE` and no peft
    checkpoint's weights, as the shipped ``gemma3-270m-reader`` does), else None."""
    if path.suffix.lower() == ".gguf" and not path.is_dir():
        return path
    checkpoint = (path / "adapter_model.safetensors").is_file()
    return path / ADAPTER_FILE if (path / ADAPTER_FILE).is_file() and not checkpoint else None


def read_lora_gguf(
    path: Path, role: str = "reader"
) -> tuple[str, float, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Read a LoRA adapter GGUF back (the inverse of :func:`~kbqa.finetune.export.write_lora_gguf`).

    Args:
        path: The adapter GGUF.
        role: The run's role; an adapter whose manifest names another ``role`` (the shipped
            reranker for a reader) is refused, save a reader's for a verifier (the default
            verifier is the shipped reader, :func:`kbqa.llm.models.check_role`).

    Returns:
        ``(architecture, alpha, pairs)``: pairs as
        :func:`~kbqa.finetune.export.lora_tensor_pairs` gives them, float32 arrays of shapes
        ``(r, in)`` and ``(out, r)`` (float16 and bfloat16 widened).

    Raises:
        InputError: Missing, or not a readable LoRA adapter GGUF (:func:`kbqa.llm.lora.
            load_adapter`'s checks), of another role, an architecture gguf-py does not know,
            tensors that are not LoRA pairs, none at all, or weights that are not finite.
    """
    import gguf

    from kbqa.errors import ModelError
    from kbqa.llm.lora import load_adapter

    if not path.is_file():
        raise InputError(f"LoRA adapter not found: {path}")
    try:
        adapter = load_adapter(str(path))  # the layout, the adapter type, the manifest's sha256
    except ModelError as exc:
        raise InputError(str(exc)) from None
    its_role = adapter.manifest.get("role", "reader")
    if its_role != role and not (its_role == "reader" and role == "verifier"):
        raise InputError(
            f"{adapter.where if adapter.copy_of else path} is a {its_role}'s adapter "
            f'("role": "{its_role}" in its manifest): a {role}\'s run starts from a {role}\'s '
            "adapter"
        )
    reader = gguf.GGUFReader(str(path))
    try:
        arch = str(reader.fields["general.architecture"].contents())
        alpha = float(reader.fields[gguf.Keys.Adapter.LORA_ALPHA].contents())
        _gguf_arch(arch)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(
            f"{path} does not name a known architecture and LoRA alpha: {exc}"
        ) from None
    parts: dict[str, dict[str, np.ndarray]] = {}
    for tensor in reader.tensors:
        name, lora, side = tensor.name.rpartition(".lora_")
        if not lora or side not in ("a", "b"):  # llama.cpp reads these two names only
            raise InputError(f"{path}: {tensor.name} is not a LoRA tensor (NAME.lora_a/b)")
        shape = [int(n) for n in reversed(tensor.shape.tolist())]  # GGUF lists dims innermost first
        data = np.asarray(tensor.data)
        if tensor.tensor_type == gguf.GGMLQuantizationType.BF16:  # raw bytes: widen to float32
            data = (data.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        values = data.astype(np.float32).reshape(shape)
        if not np.isfinite(values).all():
            raise InputError(f"{path}: {tensor.name} holds NaN or infinite weights")
        parts.setdefault(name, {})[side] = values
    if not parts:
        raise InputError(f"{path} holds no LoRA tensor")
    known = _tensor_name_pattern(arch)
    pairs = {}
    for name, sides in parts.items():
        if set(sides) != {"a", "b"}:
            raise InputError(f"{path}: {name} has lora_{''.join(sides)} only")
        if not known.fullmatch(name):
            raise InputError(f"{path}: {name} names no tensor of a {arch} model")
        a, b = sides["a"], sides["b"]
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1] or a.shape[0] < 1:
            raise InputError(
                f"{path}: {name}'s lora_a is {a.shape} and lora_b {b.shape}, not (r, in) and "
                "(out, r) with one rank r >= 1"
            )
        pairs[name] = (a, b)
    ranks = sorted({int(a.shape[0]) for a, _ in pairs.values()})
    if len(ranks) > 1:  # peft's rank_pattern: kbqa's runs train one rank
        raise InputError(f"{path} mixes LoRA ranks {ranks}: a run starts from one rank only")
    return arch, alpha, pairs


def _tensor_name_pattern(arch: str) -> re.Pattern[str]:
    """The GGUF weight names of ``arch``'s tensors (``blk.N.attn_q.weight``...), from gguf-py's
    tables."""
    import gguf

    names = (gguf.TENSOR_NAMES[t] for t in gguf.MODEL_TENSORS[_gguf_arch(arch)])
    alternatives = (re.escape(n).replace(re.escape("{bid}"), r"\d+") for n in names)
    return re.compile(rf"(?:{'|'.join(alternatives)})\.weight")


def read_exported(
    folder: Path, gguf_file: Path, r: int | None, alpha: int | None, role: str
) -> tuple[str, dict[str, Any]]:
    """``(architecture, pairs)`` of the exported adapter ``gguf_file`` (``folder`` names it in
    errors), refused when not of rank ``r`` and ``alpha`` (when given) or of another role than
    ``role`` (:func:`read_lora_gguf`).

    Raises:
        InputError: As :func:`read_lora_gguf`, or another rank or alpha.
    """
    arch, its_alpha, pairs = read_lora_gguf(gguf_file, role)
    its_r = min((int(a.shape[0]) for a, _ in pairs.values()), default=0)
    for key, its, mine in (("r", its_r, r), ("lora_alpha", its_alpha, alpha)):
        if mine is not None and its != mine:
            raise InputError(f"{folder} has LoRA {key} {its:g}, these settings {mine!r}")
    return arch, pairs


def exported_weights(model: Any, path: Path, role: str) -> dict[str, Any] | None:
    """The LoRA weights of the exported adapter GGUF ``path`` names, keyed as ``model``'s own
    (float32; the export stored float16), or None when ``path`` is a peft checkpoint.

    Raises:
        InputError: Another rank or alpha than ``model``'s, or tensors that do not fit it.
    """
    gguf_file = exported_adapter_file(path)
    if gguf_file is None:
        return None
    import numpy as np
    import torch
    from peft import get_peft_model_state_dict

    ours = model.peft_config["default"]
    arch, pairs = read_exported(path, gguf_file, ours.r, ours.lora_alpha, role)
    keys = list(get_peft_model_state_dict(model))
    state = peft_state_from_pairs(pairs, keys, arch, int(model.config.num_hidden_layers))
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}


def peft_state_from_pairs(
    pairs: Mapping[str, tuple[np.ndarray, np.ndarray]],
    keys: Iterable[str],
    arch: str,
    n_layers: int,
) -> dict[str, np.ndarray]:
    """Map GGUF LoRA pairs onto a peft model's own state-dict keys (the inverse of
    :func:`~kbqa.finetune.export.lora_tensor_pairs`).

    Args:
        pairs: From :func:`read_lora_gguf`.
        keys: The peft model's LoRA keys (``get_peft_model_state_dict``'s).
        arch: GGUF architecture name.
        n_layers: Transformer blocks of the base.

    Returns:
        ``{key: array}`` for every key.

    Raises:
        InputError: The adapter lacks a tensor of ``keys``, or holds one they lack (another
            base model or other target modules).
    """
    import gguf

    names = gguf.get_tensor_name_map(_gguf_arch(arch), n_layers)
    state: dict[str, np.ndarray] = {}
    used: set[str] = set()
    for key in keys:
        m = _PEFT_NAME.match(key)
        gguf_name = names.get_name(m["base"]) if m else None
        if m is None or gguf_name is None or gguf_name + ".weight" not in pairs:
            raise InputError(
                f"the adapter has no tensor for {key}: it adapts other modules (lora target "
                "modules) or another base model"
            )
        used.add(gguf_name + ".weight")
        state[key] = pairs[gguf_name + ".weight"][0 if m["ab"] == "A" else 1]
    extra = sorted(set(pairs) - used)
    if extra:
        raise InputError(f"the adapter holds tensors this model lacks: {extra[:3]}")
    return state


def check_fits_base(
    path: Path, base: Path, base_sha256: str, targets: Iterable[str], first_layer: int = 0
) -> None:
    """Refuse, before the base model loads, an exported adapter (``path``: a ``.gguf`` or a
    folder holding one; anything else is left alone) that a run on ``base`` cannot start from:
    trained on another base GGUF (its ``kbqa.base_sha256``) or another architecture, with
    tensors that do not fit the base's (:func:`kbqa.llm.lora.check_adapter_tensors`), or that
    does not adapt exactly the run's LoRA ``targets`` (peft module names, ``q_proj``...) in every
    block from ``first_layer`` (``--lora-first-layer``) up. Break-it findings: each of these
    was found only once the base had loaded.

    Raises:
        InputError: Naming the adapter, and the first base, architecture or tensor that differs.
    """
    import gguf

    from kbqa.errors import ModelError
    from kbqa.finetune.export import _base_layout, read_gguf_strings
    from kbqa.llm.lora import check_adapter_tensors, load_adapter

    gguf_file = exported_adapter_file(path)
    if gguf_file is None:
        return
    arch, blocks = _base_layout(base)
    try:
        adapter = load_adapter(str(gguf_file))
        its_arch = read_gguf_strings(gguf_file, ["general.architecture"]).get(
            "general.architecture"
        )
        if its_arch != arch:
            raise ModelError(f"{gguf_file} is an adapter of a {its_arch} model, not of {arch}")
        if adapter.base_sha256 != base_sha256:
            raise ModelError(
                f"{gguf_file} was trained on a base with sha256 {adapter.base_sha256[:12]}..., "
                f"not on {base.name} ({base_sha256[:12]}...)"
            )
        check_adapter_tensors(gguf_file, base)
    except ModelError as exc:
        raise InputError(str(exc)) from None
    names = gguf.get_tensor_name_map(_gguf_arch(arch), blocks)
    kinds = set()
    for target in targets:
        found = [names.get_name(f"model.layers.0.{part}.{target}") for part in ("self_attn", "mlp")]
        kinds |= {n.split(".", 2)[2] for n in found if n}
    wanted = {f"blk.{b}.{kind}.weight" for b in range(first_layer, blocks) for kind in kinds}
    held = {t.name.rpartition(".lora_")[0] for t in gguf.GGUFReader(str(gguf_file)).tensors}
    if held != wanted:
        missing, extra = sorted(wanted - held), sorted(held - wanted)
        raise InputError(
            f"{gguf_file} adapts other tensors than this run's LoRA trains ("
            + (f"it lacks {len(missing)}, first {missing[0]}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"it holds {len(extra)} more, first {extra[0]}" if extra else "")
            + f"): the run adapts {', '.join(sorted(targets))} in blocks {first_layer}-"
            f"{blocks - 1}"
        )
