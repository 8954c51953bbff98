"""Ablations and model scaling over one question sample.

Each ablation is a set of :class:`~kbqa.context.Context` overrides run into its own resumable
run directory. During ablations the LLM's answers are memoised by prompt
(:class:`langchain_core.caches.InMemoryCache`): a setting that leaves the prompt unchanged costs
no generation, so seconds per question are only comparable between the full run and settings
that change every prompt.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import regex

from kbqa.answers.cross_check import parse_rules
from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.evals.datasets import Question
from kbqa.evals.run_dir import SUMMARY_FILE, run_config, write_json
from kbqa.evals.runner import evaluate_questions
from kbqa.llm.cache import names_gguf_file

FUSION_SWEEP = (0.0, 0.25, 0.5, 0.65, 0.75, 1.0)
"""BM25 weights of the fusion sweep (dense weight = 1 - BM25 weight); 0.65 is HybridRAG-BN's."""
TABLE_KEYS = (
    "token_f1",
    "exact_match",
    "answer_contained",
    "recall@1",
    "recall@3",
    "answer_in_context",
    "abstention_rate_answerable",
    "abstention_rate_unanswerable",
    "seconds_per_question_median",
)
ABLATION_KEYS = tuple(k for k in TABLE_KEYS if k != "seconds_per_question_median")
"""Ablation columns: seconds are left out, since generations are memoised across ablations."""


def ablations(ctx: Context, *, has_dense: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """``(name, Context overrides)`` of every ablation, the full system first.

    The BM25 weight sweep covers "no dense" (1.0) and "no BM25" (0.0); it and RRF are left out
    when the index has no dense part (``has_dense`` False: every fusion is BM25 alone). The
    retry row switches the retry off when it is on; the decision-graph rows switch off the
    cross-check, the verifier, the fallback and the web search (each one that is on), all of
    them (the skeleton graph), and the LLM itself (the pattern extractor: the type-aware RAG
    seed's no-LLM ablation).
    """
    retries = f"{ctx.max_retries} retr{'y' if ctx.max_retries == 1 else 'ies'}"
    full = (
        f"full (bm25 {ctx.bm25_weight} / dense {ctx.dense_weight} {ctx.fusion}, "
        f"padding {'on' if ctx.pad_previous else 'off'}, {retries})"
    )
    if not has_dense:
        full = (
            f"full (bm25, no dense part, padding {'on' if ctx.pad_previous else 'off'}, {retries})"
        )
    rows: list[tuple[str, dict[str, Any]]] = [(full, {})]
    for w in FUSION_SWEEP if has_dense else ():
        if abs(w - ctx.bm25_weight) < 1e-9 and abs(1 - w - ctx.dense_weight) < 1e-9:
            continue
        label = {0.0: "no BM25 (dense only)", 1.0: "no dense (BM25 only)"}.get(
            w, f"fusion bm25={w}"
        )
        rows.append((label, {"bm25_weight": w, "dense_weight": round(1 - w, 4)}))
    rows += [("RRF fusion", {"fusion": "rrf"})] if has_dense else []
    rows += [("no padding", {"pad_previous": False})]
    rows += [("no retry", {"max_retries": 0})] if ctx.max_retries else []
    stages = {  # the cross-check changes answers only with rules (cross_check_rules)
        "cross_check": ctx.cross_check != "off" and bool(parse_rules(ctx.cross_check_rules)),
        "verify": ctx.verify,
        "fallback": ctx.fallback,
        "web_search": ctx.web_search != "off",
    }
    off = {"cross_check": "off", "verify": False, "fallback": False, "web_search": "off"}
    for name, on in stages.items():
        if on:
            rows.append((f"no {name.replace('_', ' ')}", {name: off[name]}))
    if sum(stages.values()) > 1:
        rows.append(("skeleton (no cross-check, verify, fallback, web)", off))
    no_llm = {"use_llm": False, "model_en": "", "reader_adapter_en": ""}  # no English reader
    rows.append(("no LLM (pattern extractor)", no_llm))
    return rows


@contextmanager
def llm_cache() -> Iterator[None]:
    """Memoise LLM generations by prompt and parameters while the block runs (LangChain's
    global :class:`~langchain_core.caches.InMemoryCache`); an already-set cache is kept."""
    from langchain_core.caches import InMemoryCache
    from langchain_core.globals import get_llm_cache, set_llm_cache

    previous = get_llm_cache()
    if previous is None:
        set_llm_cache(InMemoryCache())
    try:
        yield
    finally:
        set_llm_cache(previous)


def _slug(name: str) -> str:
    return "-".join(regex.findall(r"[\p{L}\p{N}.]+", name.lower())) or "run"


def _row(name: str, summary: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": name, **{k: summary.get(k) for k in TABLE_KEYS}, **extra}


def run_ablations(
    questions: list[Question],
    ctx: Context,
    out_dir: str | Path,
    *,
    config: dict[str, Any],
    full_summary: dict[str, Any] | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run every ablation into ``out_dir/ablations/<name>/``; write ``out_dir/ablation.json``.

    Args:
        questions: The sample.
        ctx: The full system's settings.
        out_dir: Parent run directory.
        config: The parent run's identity (:func:`~kbqa.evals.run_dir.run_config`).
        full_summary: Summary of the full system on the same sample, when already run (its
            row is then not re-run).
        overwrite: Discard earlier ablation runs instead of resuming them.
        progress: Show progress bars.

    Returns:
        One table row per ablation: its name and the figures of :data:`TABLE_KEYS`.
    """
    d = Path(out_dir)
    rows = []
    with llm_cache():
        from kbqa.resources import retriever_for

        for name, overrides in ablations(ctx, has_dense=retriever_for(ctx).mode == "hybrid"):
            if not overrides and full_summary is not None:
                rows.append(_row(name, full_summary))
                continue
            sub = dataclasses.replace(ctx, **overrides)
            cfg = {**config, "context": sub.settings()}
            run = evaluate_questions(
                questions,
                sub,
                d / "ablations" / _slug(name),
                config=cfg,
                overwrite=overwrite,
                upload=False,
                progress=progress,
            )
            rows.append(_row(name, run.summary))
    write_json(d / "ablation.json", rows)
    return rows


def run_models(
    models: Sequence[str],
    cli_args: list[str],
    out_dir: str | Path,
) -> list[dict[str, Any]]:
    """Evaluate each model in its own process (so peak memory is its own) into
    ``out_dir/models/<model>/``; write ``out_dir/models.json``.

    Args:
        models: Model names or ``.gguf`` paths.
        cli_args: ``kbqa eval`` arguments shared by every model (questions file and options,
            without ``--model``/``--out``/``--models``).
        out_dir: Parent run directory.

    Returns:
        One row per model: token F1, EM, recall@3, seconds per question, peak RSS (MiB).

    Raises:
        InputError: A model's evaluation failed (its exit status and last output are named).
    """
    d = Path(out_dir)
    rows = []
    tags: list[str] = []
    for model in models:
        tag = model_tag(model)
        if tag in tags:  # two names that map to one folder name
            tag = f"{tag}-{len(tags) + 1}"
        tags.append(tag)
        sub = d / "models" / tag
        cmd = [
            sys.executable,
            "-m",
            "kbqa.cli",
            "eval",
            "run",
            *cli_args,
            "--model",
            model,
            "--out",
            str(sub),
        ]
        print(f"== model {model} -> {sub}", file=sys.stderr, flush=True)
        # the child's progress bar and errors go straight to this terminal
        proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        if proc.returncode != 0:
            raise InputError(
                f"evaluating model {model!r} failed (exit {proc.returncode}); its error is above"
            )
        summary = json.loads((sub / SUMMARY_FILE).read_text(encoding="utf-8"))
        rows.append(_row(model, summary, peak_rss_mib=summary.get("peak_rss_mib")))
    write_json(d / "models.json", rows)
    return rows


def model_tag(model: str) -> str:
    """A file-name-safe tag for a model name or ``.gguf`` path."""
    name = Path(model).stem if names_gguf_file(model) else model
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


__all__ = ["FUSION_SWEEP", "ablations", "model_tag", "run_ablations", "run_config", "run_models"]
