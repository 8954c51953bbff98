"""The steps every ``kbqa finetune`` pipeline (``reader``, ``verifier``, ``reranker``) shares:
check the inputs before anything loads, load the base once, find or build the training KB's
index (:func:`start_run`); then train a LoRA from the start or a checkpoint, export it for
llama.cpp with its manifest, and keep the loss curve (:func:`train_and_export`)."""

from __future__ import annotations

import json
import logging
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.finetune.checkpoint import last_checkpoint
from kbqa.finetune.config import LORA_TARGETS, ReaderConfig
from kbqa.finetune.examples import ReaderExample
from kbqa.finetune.manifest import adapter_manifest
from kbqa.finetune.questions import load_training_questions
from kbqa.index import is_index_dir, source_sha256
from kbqa.llm.cache import file_sha256
from kbqa.llm.models import MODELS, base_sha256, resolve_model

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
        log.warning(
            "%d of %d questions name a doc_id not in %s: they are skipped",
            len(missing),
            len(questions),
            kb,
        )
    if not any(q.question.answerable and q.question.answers for q in questions):
        raise InputError(f"{cfg.train} has no answerable question to learn from")
    from kbqa.finetune.checkpoint import (
        check_adapter_folder,
        check_copy_target,
        read_cursor,
        recover_copy,
    )

    if cfg.checkpoint_copy:
        check_copy_target(Path(cfg.checkpoint_copy), out)
    for folder in {cfg.checkpoint_copy, cfg.resume_from} - {""}:
        if Path(folder).resolve().name:
            recover_copy(Path(folder).resolve())  # a save killed between its two renames
    if cfg.resume_from:
        read_cursor(Path(cfg.resume_from))  # fails now, not after the examples are built
    if cfg.init_adapter:
        if cfg.resume_from or cfg.resume:
            raise InputError(
                "--init-adapter starts a new run from an adapter; --resume and --resume-from "
                "continue an old one: give one of them"
            )
        check_adapter_folder(
            Path(cfg.init_adapter), cfg.lora_r, cfg.lora_alpha, exported=True, role=cfg.ROLE
        )
    checkpoints = last_checkpoint(out)
    if cfg.resume and not cfg.resume_from and checkpoints is not None:
        read_cursor(checkpoints)  # a checkpoint of an older kbqa has no cursor
    if checkpoints is not None and not (cfg.resume or cfg.resume_from):
        raise InputError(
            f"{out / 'checkpoints'} holds checkpoints of an earlier run: add --resume to continue "
            "it, or write to another --out"
        )
    if cfg.resume and checkpoints is None:
        log.warning(
            "--resume: no checkpoint in %s; training starts from the beginning", out / "checkpoints"
        )
    base, _ = resolve_model(cfg.base_model)
    if cfg.init_adapter:
        from kbqa.finetune.import_adapter import check_fits_base

        check_fits_base(
            Path(cfg.init_adapter),
            base,
            base_sha256(cfg.base_model),
            LORA_TARGETS,
            cfg.lora_first_layer,
        )


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


def training_context(cfg: ReaderConfig, index_dir: Path) -> Context:
    """The run settings examples are built (and candidates read) with: the serving retriever
    over the training index, ``cfg``'s ``k``, window and answer length, no web search."""
    return Context(
        index_dir=str(index_dir),
        embedder=cfg.embedder,
        k=cfg.k,
        n_ctx=cfg.n_ctx,
        max_answer_tokens=cfg.max_answer_tokens,
        web_search="off",
    )


def resume_point(cfg: ReaderConfig) -> Path | None:
    """The checkpoint training continues from: ``cfg.resume_from``, or with ``cfg.resume`` the
    last in ``cfg.out`` (None: from the start)."""
    if cfg.resume_from:
        return Path(cfg.resume_from)
    return last_checkpoint(Path(cfg.out)) if cfg.resume else None


def train_and_export(
    cfg: ReaderConfig,
    start: RunStart,
    train: Sequence[ReaderExample],
    val: Sequence[ReaderExample],
    data_meta: dict[str, Any],
    validate: Callable[[Path], tuple[dict[str, Any], dict[str, Any]]],
    resume_from: Path | None,
    role: str | None = None,
) -> dict[str, Any]:
    """The end every ``kbqa finetune`` pipeline shares: train a LoRA on ``start.model``
    (:func:`~kbqa.finetune.train.train_reader`, from ``resume_from`` when given), draw
    ``loss.png``, export the adapter (:func:`~kbqa.finetune.export.write_adapter`) with a
    manifest holding ``validate(staged adapter)``'s ``(validation, serving)`` records (and
    ``role``), and write ``log_history.json``.

    Returns:
        The manifest (also written to ``OUT/adapter/manifest.json``).

    Raises:
        KeyboardInterrupt: Ctrl-C during training, after the checkpoint is saved.
    """
    from peft import get_peft_model_state_dict

    from kbqa.finetune.export import write_adapter
    from kbqa.finetune.train import lora_model, plot_loss, train_reader

    out = start.out
    peft_model = lora_model(start.model, cfg)
    result = train_reader(peft_model, start.tokenizer, train, val, cfg, out, resume_from)
    if result.interrupted:
        raise KeyboardInterrupt(f"training interrupted at step {result.steps}")
    plot_loss(result.log_history, out / "loss.png")
    built: dict[str, Any] = {}

    def build_manifest(adapter: Path) -> dict[str, Any]:
        validation, serving = validate(adapter)
        manifest = adapter_manifest(
            cfg,
            out.name,
            start.base_path,
            start.base_sha,
            adapter,
            start.command,
            data_meta,
            result,
            validation=validation,
            serving=serving,
        )
        built.update({"role": role, **manifest} if role else manifest)
        return built

    weights = get_peft_model_state_dict(peft_model)
    write_adapter(
        weights, cfg.lora_alpha, start.base_path, start.base_sha, out / "adapter", build_manifest
    )
    (out / "log_history.json").write_text(json.dumps(result.log_history), "utf-8")
    return built
