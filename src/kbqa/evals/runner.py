"""Run the graph over questions with :func:`langsmith.evaluate`, resumably.

A run directory holds::

    config.json     what was run (question file hash, sample, seed, Context); a re-run with the
                    same settings resumes, other settings are refused
    records.jsonl   one record per finished question, appended as each finishes
    summary.json    aggregate figures (see :mod:`kbqa.evals.summary`)
    report.md       tables and plots (see :mod:`kbqa.evals.report`)

Without ``LANGSMITH_API_KEY`` the evaluation runs locally (``upload_results=False``) through a
client that is told the server's capabilities up front, so no socket is opened. With a key and
``upload=True`` the questions are pushed to a LangSmith dataset and an experiment is uploaded.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbqa import __version__
from kbqa.context import Context
from kbqa.errors import InputError, KBQAError
from kbqa.evals.datasets import Question, example_id, push_dataset, to_examples
from kbqa.evals.evaluators import RECALL_KS, default_evaluators, route_stages, score_all
from kbqa.evals.summary import summarize
from kbqa.evals.tracing import langsmith_client, upload_enabled
from kbqa.resources import chat_model_for, retriever_for, verifier_for
from kbqa.retrieval.index import peak_rss_mib

log = logging.getLogger("kbqa.evals")

CONFIG_FILE = "config.json"
RECORDS_FILE = "records.jsonl"
SUMMARY_FILE = "summary.json"
RUN_FIELDS = ("model", "index_dir", "peak_rss_mib", "harness")
"""Summary fields measured during a run rather than derived from its records."""


def run_question(question: str, ctx: Context) -> dict[str, Any]:
    """Invoke the graph on one question and add the evidence evaluators read.

    Returns:
        The graph's output plus ``retrieved_doc_ids`` (distinct documents of a top-10 fused
        retrieval without padding, for recall@k), ``retrieved_texts`` (that retrieval's chunk
        texts, ranked, for answer recall@k), ``context_text`` (the chunks the LLM was given),
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
    chunks = retriever.index.chunks
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
    out["context_text"] = "\n".join(chunks[c].text for c in read)
    out["context_doc_ids"] = list(dict.fromkeys(chunks[c].doc_id for c in read))
    return out


def make_record(
    q: Question, outputs: dict[str, Any] | None, error: str | None, ctx: Context
) -> dict[str, Any]:
    """One question's record: the question, what the graph did, and every evaluator's score."""
    out = dict(outputs or {"answer": "", "abstained": False, "route": []})
    if error and "error" not in out:
        out["error"] = error
    timings = out.get("timings", [])
    rec: dict[str, Any] = {
        "qid": q.qid,
        "question": q.question,
        "gold": q.answers,
        "answerable": q.answerable,
        "gold_doc_id": q.doc_id,
        "qtype": q.qtype,
        "answer": str(out.get("answer", "")),
        "abstained": bool(out.get("abstained")),
        "route": out.get("route", []),
        "answered_by": out.get("answered_by"),
        "stage_answers": out.get("stage_answers", []),
        "raw_answer": out.get("raw_answer", ""),
        "question_coverage": out.get("question_coverage"),
        "verify_changed": out.get("verify_changed"),
        "web_query": out.get("web_query"),
        "web_error": out.get("web_error"),
        "llm_error": out.get("llm_error"),
        "question_type": out.get("question_type"),
        "language": out.get("language"),
        "retrieved_doc_ids": out.get("retrieved_doc_ids", []),
        "context_chunk_ids": out.get("context_chunk_ids", []),
        "context_doc_ids": out.get("context_doc_ids", []),
        # a question the graph could not run is wrong on every count, abstention included
        "scores": (
            {k: 0.0 for k in score_all(out, q.reference(), **route_stages(ctx))}
            if "error" in out
            else score_all(out, q.reference(), **route_stages(ctx))
        ),
        "seconds": round(float(out.get("graph_seconds", 0.0)), 4),
        "timings": timings,
    }
    if "error" in out:
        rec["error"] = out["error"]
    return rec


@dataclass
class EvalRun:
    """Records (in question order) and the summary of one run directory."""

    out_dir: Path
    records: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


def run_config(
    questions_path: str | Path | None,
    questions_sha256: str | None,
    ctx: Context,
    *,
    sample: int | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """What identifies a run: a re-run resumes only when this is unchanged.

    Besides the settings it holds the index's identity (creation time, chunk count and source
    hash from its manifest), so records of an index rebuilt in place are not mixed with new ones.
    """
    return {
        "questions": None if questions_path is None else str(Path(questions_path).resolve()),
        "questions_sha256": questions_sha256,
        "sample": sample,
        "limit": limit,
        "seed": seed,
        "context": asdict(ctx),
        "index": index_identity(ctx.index_dir),
    }


def index_identity(index_dir: str | Path) -> dict[str, Any] | None:
    """``created``, ``chunks``, ``embedder``, ``source_sha256`` and ``strategy`` of the index a
    run searches (for a ``--strategy both`` directory, its default sub-index), or None when it
    has no readable manifest."""
    path = Path(index_dir)
    try:
        manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
        if isinstance(manifest, dict) and isinstance(manifest.get("indexes"), dict):
            sub = path / str(manifest.get("default") or next(iter(manifest["indexes"])))
            manifest = json.loads((sub / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, StopIteration):
        return None
    if not isinstance(manifest, dict):
        return None
    identity = {k: manifest.get(k) for k in ("created", "chunks", "embedder", "source_sha256")}
    chunking = manifest.get("chunking")
    identity["strategy"] = chunking.get("strategy") if isinstance(chunking, dict) else None
    return identity


def prepare_run_dir(
    out_dir: str | Path, config: dict[str, Any], *, overwrite: bool = False
) -> dict[str, dict[str, Any]]:
    """Create ``out_dir`` or check it can be resumed; return the records already finished.

    A torn last line of ``records.jsonl`` (a run killed mid-write) is cut off.

    Raises:
        InputError: ``out_dir`` is a file or not writable, or it holds a run with other settings
            (the message names them) and ``overwrite`` is false.
    """
    d = Path(out_dir)
    if d.exists() and not d.is_dir():
        raise InputError(f"cannot write the run to {d}: it is a file")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create {d}: {exc.strerror or exc}") from None
    if not os.access(d, os.W_OK):
        raise InputError(f"cannot write the run to {d}: folder is not writable")
    cfg_path, rec_path = d / CONFIG_FILE, d / RECORDS_FILE
    for p in (cfg_path, rec_path):
        if p.exists() and not p.is_file():
            raise InputError(f"{p} is not a file; use another --out")
    if overwrite:
        for name in (CONFIG_FILE, RECORDS_FILE, SUMMARY_FILE):
            (d / name).unlink(missing_ok=True)
    if cfg_path.exists():
        try:
            old = _read_json(cfg_path)
        except InputError as exc:
            raise InputError(f"{exc}; use --overwrite") from None
        # the file's content (sha256) identifies the questions, not where it lies
        ignored = ("kbqa_version", "questions")
        old_cfg = {k: v for k, v in old.items() if k not in ignored}
        new_cfg = {k: v for k, v in config.items() if k not in ignored}
        if old_cfg != new_cfg:
            diff = _diff(old_cfg, new_cfg)
            raise InputError(
                f"{d} holds a run with other settings ({diff}); use another --out or --overwrite"
            )
    else:
        if rec_path.is_file() and rec_path.stat().st_size > 0:
            raise InputError(
                f"{d} holds records but no {CONFIG_FILE}, so their settings are unknown; "
                "use another --out or --overwrite"
            )
        cfg_path.write_text(
            json.dumps({**config, "kbqa_version": __version__}, ensure_ascii=False, indent=1),
            encoding="utf-8",
        )
    return _read_records(rec_path)


def _diff(old: dict[str, Any], new: dict[str, Any], prefix: str = "") -> str:
    parts = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            sub = _diff(a, b, f"{prefix}{k}.")
            if sub:
                parts.append(sub)
        elif a != b:
            parts.append(f"{prefix}{k}: {a!r} then, {b!r} now")
    return "; ".join(parts)


_RECORD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "qid": str,
    "answerable": bool,
    "abstained": bool,
    "answer": str,
    "gold": list,
    "route": list,
    "stage_answers": list,
    "retrieved_doc_ids": list,
    "scores": dict,
    "seconds": (int, float),
    "timings": list,
}


def _record_problem(rec: Any) -> str | None:
    """Why ``rec`` is not a record written by :func:`make_record`, or None."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not an object"
    for key, kind in _RECORD_FIELDS.items():
        if not isinstance(rec.get(key), kind):
            return f"field {key!r} missing or of the wrong type"
    return None


def _read_records(path: Path, *, repair: bool = True) -> dict[str, dict[str, Any]]:
    """Finished records by ``qid``.

    A torn last line (no newline, or not JSON: a run killed mid-write) is ignored, and cut off
    when ``repair``. Anything else that is not a record is an error, and the file is left as is.

    Raises:
        InputError: A line other than the last is not a JSON record with a ``qid``.
    """
    done: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return done
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    good = 0
    for lineno, line in enumerate(lines, start=1):
        last = lineno == len(lines)
        try:
            rec = json.loads(line) if line.endswith(b"\n") else None
        except ValueError:
            rec = None
        problem = "not JSON" if rec is None else _record_problem(rec)
        if problem:
            if last and rec is None:
                break
            raise InputError(
                f"{path}:{lineno} is not a kbqa record ({problem}); remove that line or start "
                "over with --overwrite"
            )
        assert isinstance(rec, dict)
        done[rec["qid"]] = rec
        good += len(line)
    if good < len(data) and repair:
        log.warning("%s: dropping a torn last record (%d bytes)", path, len(data) - good)
        with path.open("r+b") as fh:
            fh.truncate(good)
    return done


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
        InputError: See :func:`prepare_run_dir`; ``max_concurrency`` < 1.
    """
    from langsmith import evaluate, tracing_context

    if max_concurrency < 1:
        raise InputError(f"max_concurrency must be >= 1, got {max_concurrency}")
    d = Path(out_dir)
    # load (and so validate) index and model before the run directory is created or cleared
    retriever_for(ctx)
    if ctx.use_llm:
        chat_model_for(ctx)
        if ctx.verify:
            verifier_for(ctx)  # a verifier that cannot load is an error here, not per question
    done = prepare_run_dir(d, config or run_config(None, None, ctx), overwrite=overwrite)
    todo = [q for q in questions if q.qid not in done]
    by_example = {example_id(q.qid): q for q in todo}
    wall = graph_s = 0.0
    if done:
        log.warning(
            "resuming %s: %d of %d questions already done, %d to run",
            d, len(questions) - len(todo), len(questions), len(todo),
        )  # fmt: skip
    if todo:
        upload = upload_enabled() if upload is None else upload
        client = langsmith_client(upload)
        if upload:
            examples = push_dataset(dataset_name or d.name, todo, client)
        else:
            examples = to_examples(todo)

        def target(inputs: dict[str, Any]) -> dict[str, Any]:
            if upload:  # the graph's node runs become children of the experiment's runs
                return run_question(inputs["question"], ctx)
            with tracing_context(enabled=False):  # local run: trace nothing, send nothing
                return run_question(inputs["question"], ctx)

        t0 = time.perf_counter()
        # a local run has no experiment to link to: hide langsmith's "Starting evaluation of
        # experiment: <random name>" line
        quiet = contextlib.nullcontext() if upload else contextlib.redirect_stdout(io.StringIO())
        with warnings.catch_warnings(), quiet:
            warnings.filterwarnings("ignore", message="'upload_runs' parameter is in beta")
            results = evaluate(
                target,
                data=examples,
                evaluators=default_evaluators(**route_stages(ctx)),
                client=client,
                upload_results=upload,
                max_concurrency=max_concurrency,
                blocking=False,
                experiment_prefix=experiment_prefix,
                metadata={
                    "model": ctx.model,
                    "index_dir": ctx.index_dir,
                    "kbqa_version": __version__,
                },
            )
        ran = 0
        finished = False
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
            if not finished:  # interrupted: keep this session's timing for the resumed run
                wall = time.perf_counter() - t0
                _write_summary(d, questions, done, ctx, ran, wall, graph_s, partial=True)
        wall = time.perf_counter() - t0
    records, summary = _write_summary(d, questions, done, ctx, len(todo), wall, graph_s)
    return EvalRun(d, records, summary)


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
    summary.update(model=ctx.model, index_dir=ctx.index_dir)
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


def write_json(path: Path, obj: Any) -> None:
    """Write JSON atomically (temp file, then rename)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(json.dumps(obj, ensure_ascii=False, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def load_run(out_dir: str | Path) -> EvalRun:
    """Read a finished (or partial) run directory; the summary is recomputed from its records.

    Raises:
        InputError: No ``records.jsonl`` in ``out_dir``.
    """
    d = Path(out_dir)
    if not (d / RECORDS_FILE).is_file():
        raise InputError(f"{d} is not an eval run directory (no {RECORDS_FILE})")
    records = list(_read_records(d / RECORDS_FILE, repair=False).values())
    summary = summarize(records)  # recomputed, so a newer kbqa re-reads old records
    stored = _read_json(d / SUMMARY_FILE)
    if stored:
        summary.update({k: v for k, v in stored.items() if k in RUN_FIELDS and _valid_field(k, v)})
        if stored.get("partial") is True:
            summary["partial"] = True
    else:  # interrupted before any summary was written
        context = _read_json(d / CONFIG_FILE).get("context", {})
        summary.update(model=context.get("model"), index_dir=context.get("index_dir"))
        summary["partial"] = True
    return EvalRun(d, records, summary)


def _valid_field(key: str, value: Any) -> bool:
    if key == "harness":
        return isinstance(value, dict) and all(
            isinstance(value.get(k), (int, float)) for k in ("wall_seconds", "graph_seconds")
        )
    if key == "peak_rss_mib":
        return isinstance(value, (int, float))
    return isinstance(value, str)


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path``; {} when missing.

    Raises:
        InputError: The file exists but is not a JSON object.
    """
    if not path.is_file():
        return {}
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path} is unreadable: {exc}") from None
    if not isinstance(obj, dict):
        raise InputError(f"{path} is not a JSON object")
    return obj
