"""Run the graph over questions with :func:`langsmith.evaluate`, resumably, into a run directory
(:mod:`kbqa.evals.run_dir`).

Without ``LANGSMITH_API_KEY`` the evaluation runs locally (``upload_results=False``) through a
client that is told the server's capabilities up front, so no socket is opened. With a key and
``upload=True`` the questions are pushed to a LangSmith dataset and an experiment is uploaded.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from kbqa.context import Context
from kbqa.errors import InputError, KBQAError
from kbqa.evals.datasets import Question, example_id, push_dataset, to_examples
from kbqa.evals.evaluators import RECALL_KS, default_evaluators, route_stages
from kbqa.evals.records import make_record
from kbqa.evals.run_dir import (
    RECORDS_FILE,
    SUMMARY_FILE,
    EvalRun,
    prepare_run_dir,
    run_config,
    run_lock,
    write_json,
)
from kbqa.evals.summary import summarize
from kbqa.index import peak_rss_mib
from kbqa.resources import chat_model_for, retriever_for, routes_english, verifier_for
from kbqa.retrieval.retriever import HybridRetriever
from kbqa.tracing import langsmith_client, upload_enabled
from kbqa.version import __version__

log = logging.getLogger("kbqa.evals")


def run_question(question: str, ctx: Context) -> dict[str, Any]:
    """Invoke the graph on one question and add the evidence evaluators read.

    Returns:
        The graph's output plus ``retrieved_doc_ids`` (distinct documents of a top-10 fused
        retrieval without padding, for recall@k), ``retrieved_texts`` (that retrieval's chunk
        texts, ranked, for answer recall@k), ``context_text`` (the chunks the LLM was given:
        under ``--reading each`` every hit's, not only the one it answered from),
        ``context_doc_ids`` (their distinct documents, in order) and ``graph_seconds`` (wall
        time of the graph alone). A question the graph rejects (:class:`KBQAError`,
        ``ValueError``) yields ``{"error": ...}`` with an empty answer instead
        of an exception, so one bad question does not sink a run.
    """
    from kbqa.graph import graph

    t0 = time.perf_counter()
    try:
        out: dict[str, Any] = dict(graph.invoke({"question": question}, context=ctx))
    except (KBQAError, ValueError) as exc:
        log.warning("question failed: %s", exc)
        out = {"answer": "", "abstained": False, "route": [], "error": str(exc)}
    out["graph_seconds"] = time.perf_counter() - t0
    retriever = retriever_for(ctx)
    chunks = retriever.chunks
    hits = retriever.retrieve(
        question,
        max(RECALL_KS),
        bm25_weight=ctx.bm25_weight,
        dense_weight=ctx.dense_weight,
        candidate_pool=ctx.candidate_pool,
        fusion=ctx.fusion,
        pad_previous=False,
    )
    docs: list[str] = []
    for h in hits:
        if chunks[h.chunk_id].doc_id not in docs:
            docs.append(chunks[h.chunk_id].doc_id)
    out["retrieved_doc_ids"] = docs
    out["retrieved_texts"] = [chunks[h.chunk_id].text for h in hits]
    read = out.get("context_chunk_ids", [])
    if out.get("context_index"):  # the fallback read its own sub-index last
        chunks = retriever_for(ctx, out["context_index"]).chunks
    elif out.get("readings"):  # --reading each read every hit; the answer is from one of them
        read = list(dict.fromkeys(c for r in out["readings"] for c in r["chunk_ids"]))
    out["context_text"] = "\n".join(chunks[c].text for c in read)
    out["context_doc_ids"] = list(dict.fromkeys(chunks[c].doc_id for c in read))
    return out


def evaluate_questions(
    questions: list[Question],
    ctx: Context,
    out_dir: str | Path,
    *,
    config: dict[str, Any] | None = None,
    overwrite: bool = False,
    upload: bool | None = None,
    dataset_name: str | None = None,
    experiment_prefix: str = "kbqa",
    max_concurrency: int = 1,
    progress: bool = True,
) -> EvalRun:
    """Evaluate ``questions`` into ``out_dir``, skipping those already finished there.

    Args:
        questions: The questions, in the order records are summarised.
        ctx: Graph settings.
        out_dir: Run directory (created; resumed when it holds the same ``config``).
        config: Run identity, see :func:`run_config` (default: from ``ctx`` alone).
        overwrite: Discard a previous run in ``out_dir``.
        upload: Upload an experiment to LangSmith; default: when ``LANGSMITH_API_KEY`` is set.
        dataset_name: LangSmith dataset to create or extend when uploading.
        experiment_prefix: LangSmith experiment name prefix.
        max_concurrency: Questions in flight; 1 suits one local model.
        progress: Show a progress bar.

    Returns:
        The run, with every record and the summary (also written to ``out_dir``).

    Raises:
        InputError: See :func:`prepare_run_dir`; ``max_concurrency`` < 1; another run is writing
            ``out_dir`` (:func:`run_lock`).
    """
    if max_concurrency < 1:
        raise InputError(f"max_concurrency must be >= 1, got {max_concurrency}")
    d = Path(out_dir)
    _load_parts(ctx)  # before the run directory is created or cleared
    with run_lock(d):
        done = prepare_run_dir(d, config or run_config(None, None, ctx), overwrite=overwrite)
        todo = [q for q in questions if q.qid not in done]
        by_example = {example_id(q.qid): q for q in todo}
        wall = graph_s = 0.0
        if done:
            log.warning(
                "resuming %s: %d of %d questions already done, %d to run",
                d,
                len(questions) - len(todo),
                len(questions),
                len(todo),
            )
        if todo:
            upload = upload_enabled() if upload is None else upload
            t0 = time.perf_counter()
            ran = 0
            finished = False
            with _one_progress_bar():
                results = _start(
                    todo, ctx, d, upload, dataset_name, experiment_prefix, max_concurrency
                )
                try:
                    with (d / RECORDS_FILE).open("a", encoding="utf-8") as fh:
                        for row in _progress(results, len(todo), progress):
                            q = by_example[row["example"].id]
                            run = row["run"]
                            rec = make_record(q, run.outputs, run.error, ctx)
                            graph_s += rec["seconds"]
                            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                            fh.flush()
                            done[q.qid] = rec
                            ran += 1
                    finished = True
                finally:
                    if not finished:  # interrupted: keep this session's timing to resume
                        wall = time.perf_counter() - t0
                        _write_summary(d, questions, done, ctx, ran, wall, graph_s, partial=True)
            wall = time.perf_counter() - t0
        records, summary = _write_summary(d, questions, done, ctx, len(todo), wall, graph_s)
        return EvalRun(d, records, summary)


def _start(
    todo: list[Question],
    ctx: Context,
    d: Path,
    upload: bool,
    dataset_name: str | None,
    experiment_prefix: str,
    max_concurrency: int,
) -> Any:
    """Start :func:`langsmith.evaluate` on ``todo`` (not blocking); its results stream in as the
    questions finish."""
    from langsmith import evaluate, tracing_context

    client = langsmith_client(upload)
    examples = push_dataset(dataset_name or d.name, todo, client) if upload else to_examples(todo)

    def target(inputs: dict[str, Any]) -> dict[str, Any]:
        if upload:  # the graph's node runs become children of the experiment's runs
            return run_question(inputs["question"], ctx)
        with tracing_context(enabled=False):  # local run: trace nothing, send nothing
            return run_question(inputs["question"], ctx)

    # a local run has no experiment to link to: hide langsmith's "Starting evaluation of
    # experiment: <random name>" line
    quiet = contextlib.nullcontext() if upload else contextlib.redirect_stdout(io.StringIO())
    with warnings.catch_warnings(), quiet:
        warnings.filterwarnings("ignore", message="'upload_runs' parameter is in beta")
        return evaluate(
            target,
            data=examples,
            evaluators=default_evaluators(**route_stages(ctx)),
            client=client,
            upload_results=upload,
            max_concurrency=max_concurrency,
            blocking=False,
            experiment_prefix=experiment_prefix,
            metadata={**_models(ctx), "index_dir": ctx.index_dir, "kbqa_version": __version__},
        )


def _load_parts(ctx: Context) -> None:
    """Load (and so validate) the index, its fusion weights, the readers (the English one too,
    when it is another) and the verifier when on: one that cannot load is an error here, not
    per question."""
    retriever = retriever_for(ctx)
    if isinstance(retriever, HybridRetriever):  # (a Milvus store checks its own)
        try:  # weights no question can be answered with: one error, not one per question
            retriever.check_weights(ctx.bm25_weight, ctx.dense_weight)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    if ctx.use_llm:
        chat_model_for(ctx)
        if routes_english(ctx):
            chat_model_for(ctx, "en")
        if ctx.verify:
            verifier_for(ctx)


def _models(ctx: Context) -> dict[str, str]:
    """The run's reader (``model``) and, when English questions have their own, ``model_en``."""
    if not routes_english(ctx):
        return {"model": ctx.model}
    model, adapter = ctx.reader_for("en")
    return {"model": ctx.model, "model_en": f"{model} + {adapter}" if adapter else model}


@contextlib.contextmanager
def _one_progress_bar() -> Iterator[None]:
    """Keep langsmith's own progress bar off the terminal while kbqa's is shown.

    ``langsmith.evaluate`` draws a bar of its own over the same results (from its private
    ``_runner._load_tqdm``, read when its worker thread starts), and the two interleave on one
    line. kbqa's bar knows the total; langsmith's is replaced by a pass-through for the run.
    """
    try:
        from langsmith.evaluation import _runner
    except ImportError:  # another langsmith layout: both bars show, nothing breaks
        yield
        return
    if not hasattr(_runner, "_load_tqdm"):
        yield
        return
    with mock.patch.object(_runner, "_load_tqdm", lambda: lambda items: items):
        yield


def _write_summary(
    d: Path,
    questions: list[Question],
    done: dict[str, dict[str, Any]],
    ctx: Context,
    ran: int,
    wall: float,
    graph_s: float,
    *,
    partial: bool = False,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    records = [done[q.qid] for q in questions if q.qid in done]
    summary = summarize(records)
    summary.update(**_models(ctx), index_dir=ctx.index_dir)
    summary.update(_run_fields(d, ran, wall, graph_s))
    if partial:
        summary["partial"] = True
    write_json(d / SUMMARY_FILE, summary)
    return records, summary


def _run_fields(d: Path, ran: int, wall: float, graph_s: float) -> dict[str, Any]:
    """Peak memory and harness timing, accumulated over every session of a resumed run.

    A session that ran nothing keeps the stored figures (a re-run of a finished run must not
    replace the measured peak memory with that of a process that loaded nothing).
    """
    stored: dict[str, Any] = {}
    if (d / SUMMARY_FILE).is_file():
        try:
            stored = json.loads((d / SUMMARY_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            stored = {}
    old = stored.get("harness") or {}
    if not ran and old:
        return {k: stored[k] for k in ("peak_rss_mib", "harness") if k in stored}
    wall_total = float(old.get("wall_seconds", 0.0)) + wall
    graph_total = float(old.get("graph_seconds", 0.0)) + graph_s
    return {
        "peak_rss_mib": max(round(peak_rss_mib(), 1), float(stored.get("peak_rss_mib") or 0.0)),
        "harness": {
            "sessions": int(old.get("sessions", 0)) + 1,
            "questions_run": int(old.get("questions_run", 0)) + ran,
            "wall_seconds": round(wall_total, 3),
            "graph_seconds": round(graph_total, 3),
            "overhead_ratio": round(wall_total / graph_total - 1, 4) if graph_total > 0 else None,
            "last_session": {
                "questions_run": ran,
                "wall_seconds": round(wall, 3),
                "graph_seconds": round(graph_s, 3),
            },
        },
    }


def _progress(results: Any, total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(results, total=total, desc="eval", unit="q", disable=not enabled)
