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
import shlex
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.finetune.config import ReaderConfig
from kbqa.finetune.data import (
    ExampleBuilder,
    build_examples,
    load_training_questions,
    split_by_document,
)
from kbqa.finetune.examples import PROMPT_STYLE, ReaderExample, read_examples, write_examples
from kbqa.finetune.manifest import adapter_manifest
from kbqa.finetune.train import last_checkpoint
from kbqa.index import is_index_dir, source_sha256
from kbqa.llm.cache import file_sha256
from kbqa.llm.models import MODELS, resolve_model

log = logging.getLogger("kbqa.finetune")


def check_inputs(cfg: ReaderConfig) -> None:
    """Fail before any model loads, and before anything in ``--out`` is written, on inputs that
    cannot work.

    Raises:
        InputError: A missing or malformed question file (file and line named); a knowledge
            base that is missing, a directory or malformed; no question whose ``doc_id`` is in
            the knowledge base, or none answerable; an ``--index`` that is not a kbqa index or
            was built from another knowledge base; ``--out`` that is a file, or that holds
            checkpoints of an earlier run without ``--resume``.
        ModelError: An unknown base model.
    """
    from kbqa.corpus.loaders import load_documents

    questions = load_training_questions(Path(cfg.train))
    kb, out = Path(cfg.kb), Path(cfg.out)
    if kb.is_dir():
        raise InputError(f"--kb {kb} is a directory: give the knowledge base's JSON Lines file")
    if not kb.is_file():
        raise InputError(f"knowledge base not found: {kb}")
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file, not a directory")
    if cfg.index:
        index = Path(cfg.index)
        if not is_index_dir(index):
            raise InputError(f"--index {index} is not a kbqa index (build it with kbqa index)")
        built = json.loads((index / "manifest.json").read_text("utf-8")).get("source_sha256")
        if built and built != source_sha256(kb):
            raise InputError(f"--index {index} was built from another knowledge base than {kb}")
    doc_ids = {d.doc_id for d in load_documents(kb, skip_bad_lines=cfg.skip_bad_lines)}
    missing = [q.question for q in questions if q.question.doc_id not in doc_ids]
    if len(missing) == len(questions):
        raise InputError(
            f"none of the {len(questions)} questions of {cfg.train} names a doc_id of {kb} "
            f"(first: {missing[0].qid} -> {missing[0].doc_id!r})"
        )
    if missing:
        log.warning("%d of %d questions name a doc_id not in %s: they are skipped",
                    len(missing), len(questions), kb)  # fmt: skip
    if not any(q.question.answerable and q.question.answers for q in questions):
        raise InputError(f"{cfg.train} has no answerable question to learn from")
    from kbqa.finetune.checkpoint import check_copy_target, read_cursor, recover_copy

    if cfg.checkpoint_copy:
        check_copy_target(Path(cfg.checkpoint_copy), out)
    for folder in {cfg.checkpoint_copy, cfg.resume_from} - {""}:
        if Path(folder).resolve().name:
            recover_copy(Path(folder).resolve())  # a save killed between its two renames
    if cfg.resume_from:
        read_cursor(Path(cfg.resume_from))  # fails now, not after the examples are built
    checkpoints = last_checkpoint(out)
    if cfg.resume and not cfg.resume_from and checkpoints is not None:
        read_cursor(checkpoints)  # a checkpoint of an older kbqa has no cursor
    if checkpoints is not None and not (cfg.resume or cfg.resume_from):
        raise InputError(
            f"{out / 'checkpoints'} holds checkpoints of an earlier run: add --resume to continue "
            "it, or write to another --out"
        )
    if cfg.resume and checkpoints is None:
        log.warning("--resume: no checkpoint in %s; training starts from the beginning",
                    out / "checkpoints")  # fmt: skip
    resolve_model(cfg.base_model)


def ensure_index(cfg: ReaderConfig, out: Path) -> Path:
    """The training KB's index: ``cfg.index``, or one built into ``out/index`` (again when the
    KB's contents or the embedder changed since)."""
    if cfg.index:
        return Path(cfg.index)
    target = out / "index"
    manifest = target / "manifest.json"
    from kbqa.embedders import resolve_embedder

    current = {
        "source_sha256": source_sha256(Path(cfg.kb)),
        "embedder": resolve_embedder(cfg.embedder),
    }
    built = json.loads(manifest.read_text("utf-8")) if manifest.is_file() else {}
    if any(built.get(k) != v for k, v in current.items()):
        from kbqa.corpus.loaders import load_documents
        from kbqa.embedders import load_embedder
        from kbqa.index import build_index

        log.warning("indexing the training knowledge base %s into %s", cfg.kb, target)
        build_index(
            load_documents(Path(cfg.kb), skip_bad_lines=cfg.skip_bad_lines),
            target,
            load_embedder(cfg.embedder),
            source=cfg.kb,
        )
    return target


def prepare_examples(
    cfg: ReaderConfig, out: Path, tokenizer: Any, index_dir: Path
) -> tuple[list[ReaderExample], dict[str, Any]]:
    """Build the examples, or reuse ``out/examples.jsonl`` when the data settings are the
    same.

    Length: the cache check (reuse examples built with the same settings) and the build share their
    settings record.
    """
    from kbqa.finetune.base import TokenizerCounter

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
    ctx = Context(
        index_dir=str(index_dir),
        embedder=cfg.embedder,
        k=cfg.k,
        n_ctx=cfg.n_ctx,
        max_answer_tokens=cfg.max_answer_tokens,
        web_search="off",
    )
    counter = TokenizerCounter(tokenizer, PROMPT_STYLE)
    builder = ExampleBuilder(ctx, counter, seed=cfg.seed)
    short = None
    if cfg.train_k:  # the answer's chunk and distractors, no padding: a cheaper training window
        short_ctx = replace(ctx, k=cfg.train_k, pad_previous=False)
        short = ExampleBuilder(short_ctx, counter, seed=cfg.seed + 1)
    splits = split_by_document(questions, cfg.val_fraction, cfg.seed)
    if "val" not in splits.values() or "train" not in splits.values():
        raise InputError(
            f"{len(splits)} document(s) cannot be split into training and validation "
            f"(--val-fraction {cfg.val_fraction}): at least 2 are needed"
        )
    started = time.perf_counter()
    examples, stats = build_examples(
        questions,
        builder,
        splits=splits,
        negative_ratio=cfg.negative_ratio,
        redacted_share=cfg.redacted_share,
        yes_no_ratio=cfg.yes_no_ratio,
        seed=cfg.seed,
        short_builder=short,
        served_share=cfg.served_share if short else 1.0,
        paraphrase_share=cfg.paraphrase_share,
    )
    write_examples(path, examples)
    split_record = {
        "seed": cfg.seed,
        "val_fraction": cfg.val_fraction,
        "val_documents": sorted(d for d, part in splits.items() if part == "val"),
    }
    (out / "split.json").write_text(json.dumps(split_record, ensure_ascii=False, indent=1), "utf-8")
    meta = {
        "settings": settings,
        "seconds": round(time.perf_counter() - started, 1),
        "questions": stats.questions,
        "usable": stats.usable,
        "unusable": stats.unusable,
        "by_kind": stats.by_kind,
        "negative_ratio_train": round(stats.negative_ratio("train"), 3),
        "gold_inserted": stats.gold_inserted,
        "gold_first": stats.gold_first,
        "no_negative_context": stats.no_negative_context,
        "paraphrased": stats.paraphrased,
        "val_documents": sum(1 for s in splits.values() if s == "val"),
        "train_documents": sum(1 for s in splits.values() if s == "train"),
    }
    meta_path.write_text(json.dumps(meta, ensure_ascii=False, indent=1), "utf-8")
    return examples, meta


def val_sample(examples: list[ReaderExample], n: int, seed: int) -> list[ReaderExample]:
    """A seeded sample of ``n`` validation examples (all when fewer)."""
    val = [e for e in examples if e.split == "val"]
    return random.Random(seed).sample(val, min(n, len(val)))


@dataclass
class RunStart:
    """What every ``kbqa finetune`` pipeline starts from: the checked inputs' output directory,
    the command line, the base GGUF and its sha256, the base loaded in transformers, and the
    training KB's index."""

    out: Path
    command: str
    base_path: Path
    base_sha: str
    model: Any
    tokenizer: Any
    index_dir: Path


def start_run(cfg: ReaderConfig, command: str | None = None) -> RunStart:
    """Check the inputs (:func:`check_inputs`), make ``cfg.out``, load the base model once
    (converted weights cached) and find or build the training index (:func:`ensure_index`).

    Raises:
        InputError, ModelError: See :func:`check_inputs` and
            :func:`kbqa.finetune.base.load_base`.
    """
    from kbqa.finetune.base import load_base

    check_inputs(cfg)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    command = command or shlex.join(["kbqa", *sys.argv[1:]])  # argv: kbqa finetune reader ...
    base_path, _ = resolve_model(cfg.base_model)
    spec = MODELS.get(cfg.base_model)
    base_sha = spec.sha256 if spec else file_sha256(base_path)
    model, tokenizer = load_base(base_path, sha256=base_sha)
    return RunStart(out, command, base_path, base_sha, model, tokenizer, ensure_index(cfg, out))


def run_reader_finetune(cfg: ReaderConfig, command: str | None = None) -> dict[str, Any]:
    """Run the whole pipeline; returns the manifest (also written to ``OUT/adapter``).

    Raises:
        ModelError: The base model cannot be resolved or converted.
        InputError: A bad training or KB file (the message names it).
        ValueError: No usable example.
        KeyboardInterrupt: Ctrl-C during training, after the checkpoint is saved.
    """
    from peft import get_peft_model_state_dict

    from kbqa.finetune.evaluate import (
        THRESHOLDS,
        abstention_curve,
        choose_threshold,
        load_reader,
        score_reader,
    )
    from kbqa.finetune.export import write_adapter
    from kbqa.finetune.train import lora_model, plot_loss, train_reader

    start = start_run(cfg, command)
    out, command, base_path, base_sha = start.out, start.command, start.base_path, start.base_sha
    model, tokenizer, index_dir = start.model, start.tokenizer, start.index_dir
    examples, data_meta = prepare_examples(cfg, out, tokenizer, index_dir)
    train = [e for e in examples if e.split == "train"]
    val = val_sample(examples, cfg.val_examples, cfg.seed)  # validation loss and F1 alike
    if not train:
        raise ValueError(
            f"no usable training example: {data_meta['usable']} of {data_meta['questions']} "
            "questions gave one, none in the training documents (an answer must occur verbatim "
            "in its document's passages)"
        )
    peft_model = lora_model(model, cfg)
    resume_from = Path(cfg.resume_from) if cfg.resume_from else None
    if resume_from is None and cfg.resume:
        resume_from = last_checkpoint(out)
    result = train_reader(peft_model, tokenizer, train, val, cfg, out, resume_from)
    if result.interrupted:
        raise KeyboardInterrupt(f"training interrupted at step {result.steps}")
    adapter_dir = out / "adapter"
    plot_loss(result.log_history, out / "loss.png")
    built: dict[str, Any] = {}

    def build_manifest(adapter: Path) -> dict[str, Any]:
        """Score the staged adapter in llama.cpp and describe it (see write_adapter)."""
        reader = load_reader(base_path, adapter, n_ctx=cfg.n_ctx, n_threads=cfg.threads or None)
        scores = score_reader(reader, val)
        serving = choose_threshold(scores.f1, abstention_curve(reader, val, THRESHOLDS))
        built.update(
            adapter_manifest(cfg, out.name, base_path, base_sha, adapter, command, data_meta,
                             result, validation=scores.to_dict(), serving=serving)
        )  # fmt: skip
        return built

    write_adapter(
        get_peft_model_state_dict(peft_model),
        cfg.lora_alpha,
        base_path,
        base_sha,
        adapter_dir,
        build_manifest,
    )
    (out / "log_history.json").write_text(json.dumps(result.log_history), "utf-8")
    return built
