"""What an exported adapter's ``manifest.json`` records about its training: the base it needs,
the training data's sha256 and terms, the command, the seed, every setting, the example counts,
the training and validation figures, the serving choice and the library versions
(:func:`adapter_manifest`; ``kbqa finetune reader``, ``verifier`` and ``reranker`` all write it).
No machine's paths: file settings keep their names only (:mod:`kbqa.finetune.portable`)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from kbqa.finetune.config import LORA_TARGETS, ReaderConfig
from kbqa.finetune.examples import PROMPT_STYLE
from kbqa.finetune.portable import PATH_SETTINGS, portable_command, portable_path
from kbqa.llm.cache import file_sha256

DATA_TERMS = (
    "Trained on Haque et al. 2020, 'Factoid Question Answering over Bangla Comprehension' "
    "(8,022 questions over 1,675 news and book passages). The data set states no license; it "
    "is used for research with citation. The adapter holds LoRA weights, not the text."
)
HAQUE_2020_SHA256 = "59bedfc255cd2f059d74ff9d000980980394cceb08e38904b14dfe04afb5cb7a"
"""sha256 of Haque 2020's question file as the project's data folder holds it: a training file
with this hash gets :data:`DATA_TERMS` (the data set is known by its content, never by a path)."""


def data_terms(train: Path, sha256: str) -> str:
    """The training data's terms for the manifest: :data:`DATA_TERMS` for Haque 2020 (known by
    its sha256), else a note that they are the data set's own."""
    if sha256 == HAQUE_2020_SHA256:
        return DATA_TERMS
    return (
        f"Trained on {train.name} (sha256 {sha256[:12]}...); its terms are those of that data "
        "set, which kbqa does not record. The adapter holds LoRA weights, not the text."
    )


def adapter_manifest(
    cfg: ReaderConfig,
    name: str,
    base_path: Path,
    base_sha: str,
    adapter: Path,
    command: str,
    data_meta: dict[str, Any],
    result: Any,
    *,
    validation: dict[str, Any],
    serving: dict[str, Any],
) -> dict[str, Any]:
    """What the adapter's ``manifest.json`` records: the base it needs, the training data's
    sha256 and terms, the command, the seed, every setting, the example counts, the training
    figures, the validation figures, the serving choice and the library versions."""
    from importlib.metadata import version

    import peft
    import torch
    import transformers

    from kbqa.index import peak_rss_mib
    from kbqa.version import __version__

    last_loss = next(
        (
            h.get("loss", h.get("train_loss"))
            for h in reversed(result.log_history)
            if "loss" in h or "train_loss" in h
        ),
        None,
    )
    train_sha = file_sha256(Path(cfg.train))
    return {
        "name": name,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "kbqa_version": __version__,
        "base_model": cfg.base_model,
        "base_gguf": base_path.name,
        "base_sha256": base_sha,
        "prompt_style": PROMPT_STYLE,
        "adapter_sha256": file_sha256(adapter),
        "adapter_bytes": adapter.stat().st_size,
        "lora": {
            "r": cfg.lora_r,
            "alpha": cfg.lora_alpha,
            "dropout": cfg.lora_dropout,
            "targets": list(LORA_TARGETS),
        },
        "training_data": {
            "train": {"file": Path(cfg.train).name, "sha256": train_sha},
            "kb": {"file": Path(cfg.kb).name, "sha256": file_sha256(Path(cfg.kb))},
            "terms": data_terms(Path(cfg.train), train_sha),
        },
        "command": portable_command(command),
        "seed": cfg.seed,
        "config": {
            k: portable_path(v) if k in PATH_SETTINGS else v for k, v in cfg.to_dict().items()
        },
        "examples": {k: v for k, v in data_meta.items() if k != "settings"},
        "training": {
            "steps": result.steps,
            "examples_seen": result.examples_seen,
            "train_seconds": round(result.train_seconds, 1),
            "seconds_per_step": round(result.seconds_per_step, 2),
            "tokens_per_second": round(result.tokens_per_second, 1),
            "finished": result.finished,
            "stopped_by_budget": result.stopped_by_budget,
            "eval_loss": result.eval_loss,
            "final_train_loss": last_loss,
            "peak_rss_mib": round(peak_rss_mib()),
        },
        "validation": validation,
        "serving": serving,
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
            # the synonym paraphrase rule's dictionary (kbqa.finetune.synonyms)
            **(
                {"shobdo": version("shobdo")}
                if "synonym" in cfg.paraphrases and cfg.paraphrase_share > 0
                else {}
            ),
        },
    }
