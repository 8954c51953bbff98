"""A uniform soup of LoRA checkpoints: the mean of their weight updates, as one adapter.

Model soups (Wortsman et al. 2022, "Model soups: averaging weights of multiple fine-tuned models
improves accuracy without increasing inference time", ICML) average the weights of models
fine-tuned from one start; the uniform soup is the plain mean. A LoRA's update of a weight
``W`` is ``(alpha / r) * B @ A``, and the mean of the products is not the product of the means,
so each module's mean update is computed in full (``(out, in)``, float64) and refactored to
rank ``--rank`` by SVD (``B' = U_r sqrt(S_r / s)``, ``A' = sqrt(S_r / s) V_r^T``, with the
output's scale ``s = alpha / rank``). The share of the update's energy that the truncation
drops is printed per soup (worst module and mean).

    python benchmarks/lora_soup.py --out /tmp/soup --rank 16 \\
        runs/reader-syn/checkpoints/checkpoint-818 runs/reader-p7/checkpoints/checkpoint-815 \\
        runs/reader-p8/checkpoints/checkpoint-827
    kbqa finetune export /tmp/soup --out /tmp/soup-gguf      # then --reader-adapter /tmp/soup-gguf

Each input is a PEFT adapter folder (``adapter_config.json`` and ``adapter_model.safetensors``:
a ``kbqa finetune reader`` checkpoint) of a plain LoRA of linear layers (no rsLoRA, DoRA, rank
or alpha pattern, LoRA bias, saved modules or embedding LoRA); the checkpoints must share their base and LoRA modules, and
``--rank`` must not exceed a module's smaller dimension, else ``SystemExit`` names the problem. Needs the ``finetune`` extra (torch,
safetensors). Writes a PEFT folder; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def soup(folders: list[Path], rank: int) -> tuple[dict, dict, list[float]]:
    """The uniform soup of ``folders``' LoRA updates at ``rank``: (tensors, config, energy
    dropped per module, each in [0, 1])."""
    import torch
    from safetensors.torch import load_file

    for folder in folders:
        for name in ("adapter_config.json", "adapter_model.safetensors"):
            if not (folder / name).is_file():
                raise SystemExit(f"{folder}: no {name} (not a PEFT LoRA adapter folder)")
    configs, weights = [], []
    for folder in folders:
        try:
            configs.append(json.loads((folder / "adapter_config.json").read_text("utf-8")))
            weights.append(load_file(str(folder / "adapter_model.safetensors")))
        except (ValueError, OSError) as exc:  # bad JSON or a corrupt safetensors file
            raise SystemExit(f"{folder}: cannot read the adapter: {exc}") from exc
    for folder, config, tensors in zip(folders, configs, weights, strict=True):
        missing = [k for k in ("r", "lora_alpha", "base_model_name_or_path") if k not in config]
        if missing:
            raise SystemExit(f"{folder}: adapter_config.json has no {missing[0]}")
        if any(t.dim() != 2 for t in tensors.values()):
            raise SystemExit(f"{folder}: a plain LoRA of linear layers only (2-D weights)")
        unsupported = [
            key
            for key in (
                "use_rslora",
                "use_dora",
                "rank_pattern",
                "alpha_pattern",
                "modules_to_save",
                "lora_bias",
            )
            if config.get(key)
        ] + sorted({k for k in tensors if "lora_A" not in k and "lora_B" not in k})[:1]
        if unsupported:
            raise SystemExit(f"{folder}: a plain LoRA only; this one has {unsupported[0]}")
        if not any("lora_A" in k for k in tensors):
            raise SystemExit(f"{folder}: no LoRA modules (lora_A weights) in it")
        unpaired = [
            k for k in tensors if "lora_A" in k and k.replace("lora_A", "lora_B") not in tensors
        ]
        if unpaired:
            raise SystemExit(f"{folder}: {unpaired[0]} has no lora_B weight beside it")
    for folder, config, tensors in zip(folders[1:], configs[1:], weights[1:], strict=True):
        if config["base_model_name_or_path"] != configs[0]["base_model_name_or_path"]:
            raise SystemExit(f"{folder}: its base model differs from {folders[0]}'s")
        if set(tensors) != set(weights[0]):
            raise SystemExit(f"{folder}: its LoRA modules differ from {folders[0]}'s")
        for key, tensor in tensors.items():
            if "lora_B" in key and tensor.shape[0] != weights[0][key].shape[0]:
                raise SystemExit(f"{folder}: {key} has another shape than {folders[0]}'s")
            if "lora_A" in key and tensor.shape[1] != weights[0][key].shape[1]:
                raise SystemExit(f"{folder}: {key} has another shape than {folders[0]}'s")
    scale = configs[0]["lora_alpha"] / rank
    out: dict = {}
    dropped: list[float] = []
    for key_a in sorted(k for k in weights[0] if "lora_A" in k):
        key_b = key_a.replace("lora_A", "lora_B")
        update = sum(
            (c["lora_alpha"] / c["r"]) * (w[key_b].double() @ w[key_a].double())
            for c, w in zip(configs, weights, strict=True)
        ) / len(folders)
        if rank > min(update.shape):
            raise SystemExit(
                f"--rank {rank} exceeds {key_a}'s smallest dimension {min(update.shape)}"
            )
        u, s, vh = torch.linalg.svd(update, full_matrices=False)
        root = (s[:rank] / scale).sqrt()
        out[key_a] = (root[:, None] * vh[:rank]).float().contiguous()
        out[key_b] = (u[:, :rank] * root).float().contiguous()
        energy = float((s**2).sum())
        dropped.append(float((s[rank:] ** 2).sum()) / energy if energy > 0 else 0.0)
    config = {**configs[0], "r": rank}
    return out, config, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", type=Path, help="PEFT adapter folders")
    parser.add_argument("--out", type=Path, required=True, help="folder to write the soup to")
    parser.add_argument("--rank", type=int, default=16, help="LoRA rank of the soup (1 or more)")
    args = parser.parse_args()
    if len(args.checkpoints) < 2:
        parser.error("a soup needs two checkpoints or more")
    if args.rank < 1:
        parser.error("--rank must be 1 or more")
    from safetensors.torch import save_file

    tensors, config, dropped = soup(args.checkpoints, args.rank)
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(args.out / "adapter_model.safetensors"))
    (args.out / "adapter_config.json").write_text(json.dumps(config, indent=2), "utf-8")
    print(
        f"{len(dropped)} modules; energy dropped at rank {args.rank}: "
        f"worst {max(dropped):.2e}, mean {sum(dropped) / len(dropped):.2e}; wrote {args.out}"
    )


if __name__ == "__main__":
    main()
