"""``kbqa finetune reader``: examples, LoRA training, llama.cpp adapter, validation, manifest.

Output directory::

    OUT/index/            the training KB's index (unless --index was given)
    OUT/examples.jsonl    every rendered example (train and val), OUT/data.json their counts
    OUT/split.json        the validation documents (80/20 by document, seeded)
    OUT/checkpoints/      checkpoint-N: adapter + cursor (--resume continues from the last,
                          --resume-from DIR from any, e.g. one committed from another machine)
    OUT/adapter/          adapter.gguf + manifest.json: what `--reader-adapter OUT/adapter` serves
    OUT/loss.png          the loss curve

The adapter's manifest is :mod:`kbqa.finetune.manifest`'s.
"""

from __future__ import annotations

import json
import logging
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from kbqa.errors import InputError
from kbqa.finetune.checkpoint import last_checkpoint
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.data import ExampleBuilder
from kbqa.finetune.example_set import add_rule_kinds, build_examples
from kbqa.finetune.examples import PROMPT_STYLE, ReaderExample, read_examples, write_examples
from kbqa.finetune.pipeline import resume_point, start_run, train_and_export, training_context
from kbqa.finetune.questions import (
    TrainingQuestion,
    load_training_questions,
    split_by_document,
)
from kbqa.index import source_sha256

log = logging.getLogger("kbqa.finetune")


def prepare_examples(
    cfg: ReaderConfig, out: Path, tokenizer: Any, index_dir: Path
) -> tuple[list[ReaderExample], dict[str, Any]]:
    """Build the examples, or reuse ``out/examples.jsonl`` when the data settings are the
    same.

    Returns:
        ``(examples, meta)``: the examples (both splits) and ``out/data.json``'s record.

    Raises:
        InputError: ``--resume`` with examples built under other settings, or questions that
            cannot be split into training and validation documents.
    """
    meta_path, path = out / "data.json", out / "examples.jsonl"
    settings = {
        **cfg.data_settings(),
        "train": str(cfg.train),
        "train_sha256": source_sha256(Path(cfg.train)),
        "index": str(index_dir),
        "index_created": json.loads((index_dir / "manifest.json").read_text("utf-8")).get(
            "created"
        ),
    }
    if meta_path.is_file() and path.is_file():
        meta = json.loads(meta_path.read_text("utf-8"))
        if meta.get("settings") == settings:
            return list(read_examples(path)), meta
        if cfg.resume and last_checkpoint(out) is not None:
            changed = sorted(k for k, v in settings.items() if meta.get("settings", {}).get(k) != v)
            raise InputError(
                f"--resume: the examples of {out} were built with other settings "
                f"({', '.join(changed)} changed); resuming would train the checkpoint on other "
                "examples and another split. Write to a new --out instead"
            )
    questions = load_training_questions(Path(cfg.train))
    if cfg.max_questions:
        questions = random.Random(cfg.seed).sample(
            questions, min(cfg.max_questions, len(questions))
        )
    builder, short = _example_builders(cfg, index_dir, tokenizer)
    splits = split_by_document(questions, cfg.val_fraction, cfg.seed)
    if "val" not in splits.values() or "train" not in splits.values():
        raise InputError(
            f"{len(splits)} document(s) cannot be split into training and validation "
            f"(--val-fraction {cfg.val_fraction}): at least 2 are needed"
        )
    started = time.perf_counter()
    examples, stats = _build(cfg, questions, (builder, short), splits)
    write_examples(path, examples)
    split_record = {
        "seed": cfg.seed,
        "val_fraction": cfg.val_fraction,
        "val_documents": sorted(d for d, part in splits.items() if part == "val"),
    }
    (out / "split.json").write_text(json.dumps(split_record, ensure_ascii=False, indent=1), "utf-8")
    meta = {"settings": settings, "seconds": round(time.perf_counter() - started, 1)}
    meta |= _stats_record(stats, splits)
    meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), "utf-8")
    return examples, meta


def _build(
    cfg: ReaderConfig,
    questions: list[TrainingQuestion],
    builders: tuple[ExampleBuilder, ExampleBuilder | None],
    splits: dict[str, str],
) -> tuple[list[ReaderExample], Any]:
    """Every example of the run's settings: :func:`~kbqa.finetune.example_set.build_examples`,
    then the rule kinds when asked for (:func:`~kbqa.finetune.example_set.add_rule_kinds`)."""
    builder, short = builders
    served_share = cfg.served_share if short else 1.0
    examples, stats = build_examples(
        questions,
        builder,
        splits=splits,
        negative_ratio=cfg.negative_ratio,
        redacted_share=cfg.redacted_share,
        yes_no_ratio=cfg.yes_no_ratio,
        seed=cfg.seed,
        short_builder=short,
        served_share=served_share,
        paraphrase_share=cfg.paraphrase_share,
        paraphrase_rules=cfg.paraphrases,
    )
    if cfg.kinds or cfg.trap_ratio:
        examples = add_rule_kinds(
            examples,
            stats,
            questions,
            builders,
            splits=splits,
            kinds=cfg.kinds,
            trap_ratio=cfg.trap_ratio,
            trap_rules=cfg.traps,
            served_share=served_share,
            seed=cfg.seed,
        )
    return examples, stats


def _example_builders(
    cfg: ReaderConfig, index_dir: Path, tokenizer: Any
) -> tuple[ExampleBuilder, ExampleBuilder | None]:
    """The builder of served-context examples, and with ``cfg.train_k`` the builder of short
    training windows (the answer's chunk and distractors, no padding)."""
    from kbqa.finetune.base import TokenizerCounter

    ctx = training_context(cfg, index_dir)
    counter = TokenizerCounter(tokenizer, PROMPT_STYLE)
    builder = ExampleBuilder(ctx, counter, seed=cfg.seed)
    if not cfg.train_k:
        return builder, None
    short_ctx = replace(ctx, k=cfg.train_k, pad_previous=False)
    return builder, ExampleBuilder(short_ctx, counter, seed=cfg.seed + 1)


def _stats_record(stats: Any, splits: dict[str, str]) -> dict[str, Any]:
    """The build's counts for ``data.json`` (:class:`~kbqa.finetune.data.DataStats`)."""
    return {
        "questions": stats.questions,
        "usable": stats.usable,
        "unusable": stats.unusable,
        "by_kind": stats.by_kind,
        "negative_ratio_train": round(stats.negative_ratio("train"), 3),
        "gold_inserted": stats.gold_inserted,
        "gold_first": stats.gold_first,
        "no_negative_context": stats.no_negative_context,
        "paraphrased": stats.paraphrased,
        "made": stats.made,
        "val_documents": sum(1 for s in splits.values() if s == "val"),
        "train_documents": sum(1 for s in splits.values() if s == "train"),
    }


def val_sample(examples: list[ReaderExample], n: int, seed: int) -> list[ReaderExample]:
    """A seeded sample of ``n`` validation examples (all when fewer)."""
    val = [e for e in examples if e.split == "val"]
    return random.Random(seed).sample(val, min(n, len(val)))


def run_reader_finetune(cfg: ReaderConfig, command: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline; returns the manifest (also written to ``OUT/adapter``).

    Raises:
        ModelError: The base model cannot be resolved or converted.
        InputError: A bad training or KB file (the message names it).
        ValueError: No usable example.
        KeyboardInterrupt: Ctrl-C during training, after the checkpoint is saved.
    """
    from kbqa.finetune.evaluate import (
        THRESHOLDS,
        abstention_curve,
        choose_threshold,
        load_reader,
        score_reader,
    )

    start = start_run(cfg, command)
    examples, data_meta = prepare_examples(cfg, start.out, start.tokenizer, start.index_dir)
    train = [e for e in examples if e.split == "train"]
    val = val_sample(examples, cfg.val_examples, cfg.seed)  # validation loss and F1 alike
    if not train:
        raise ValueError(
            f"no usable training example: {data_meta['usable']} of {data_meta['questions']} "
            "questions gave one, none in the training documents (an answer must occur verbatim "
            "in its document's passages)"
        )

    def validate(adapter: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        """Score the staged adapter in llama.cpp; choose its abstention threshold."""
        reader = load_reader(
            start.base_path, adapter, n_ctx=cfg.n_ctx, n_threads=cfg.threads or None
        )
        scores = score_reader(reader, val)
        serving = choose_threshold(scores.f1, abstention_curve(reader, val, THRESHOLDS))
        return scores.to_dict(), serving

    return train_and_export(cfg, start, train, val, data_meta, validate, resume_point(cfg))
