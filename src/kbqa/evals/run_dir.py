"""A run directory: what a ``kbqa eval`` run writes, and how a re-run resumes it.

A run directory holds::

    config.json     what was run (question file hash, sample, seed, Context); a re-run with the
                    same settings resumes, other settings are refused
    records.jsonl   one record per finished question, appended as each finishes
    summary.json    aggregate figures (see :mod:`kbqa.evals.summary`)
    report.md       tables and plots (see :mod:`kbqa.evals.report`)
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from kbqa.context import Context
from kbqa.errors import InputError
from kbqa.evals.summary import summarize
from kbqa.paths import in_the_way, write_refusal
from kbqa.text import lone_surrogate
from kbqa.version import __version__

log = logging.getLogger("kbqa.evals")

CONFIG_FILE = "config.json"

RECORDS_FILE = "records.jsonl"

SUMMARY_FILE = "summary.json"

RUN_FIELDS = ("model", "index_dir", "peak_rss_mib", "harness")
"""Summary fields measured during a run rather than derived from its records."""


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
    disjoint_from: list[int] | None = None,
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
        **({"disjoint_from": disjoint_from} if disjoint_from else {}),
        "context": ctx.settings(),
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


def _not_text(value: Any) -> str | None:
    """The first string inside ``value`` (a run's config) that cannot be written as UTF-8."""
    if isinstance(value, str):
        return value if lone_surrogate(value) else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return next((odd for v in items if (odd := _not_text(v)) is not None), None)


@contextmanager
def run_lock(out_dir: str | Path) -> Iterator[None]:
    """Held while a run writes ``out_dir`` (a file lock, ``.<name>.lock`` beside it, by the
    ``filelock`` library): a second ``kbqa eval --out`` of the same folder stops at once instead
    of answering every question again into the same records (a break-it trial: two runs wrote
    each question twice). Where the folder's parent cannot be made or written, nothing is
    locked and :func:`prepare_run_dir` says why.

    Raises:
        InputError: Another run holds the lock.
    """
    try:  # named after the folder itself: a link to it is the same run (a break-it trial)
        d = Path(out_dir).resolve()
    except (OSError, RuntimeError):  # a loop of links: prepare_run_dir says so
        d = Path(out_dir)
    path = d.parent / f".{d.name}.lock"
    try:
        d.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(path, timeout=0)
        lock.acquire()
    except Timeout:
        raise InputError(
            f"another `kbqa eval` is writing {d} right now; wait for it to finish (or stop it) "
            "and run this again, or use another --out"
        ) from None
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()
        path.unlink(missing_ok=True)


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
    # checked before anything is written or removed (a break-it trial: a file name not in
    # UTF-8 left an empty config.json behind, and --overwrite had removed the records)
    odd = _not_text(config)
    if odd is not None:
        raise InputError(
            f"a path of this run is not valid text (a file name that is not UTF-8?): {odd!a}; "
            "rename the file"
        )
    if d.exists() and not d.is_dir():
        raise InputError(f"cannot write the run to {d}: it is a file")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = in_the_way(d) or exc.strerror or exc
        raise InputError(f"cannot create {d}: {why}") from None
    refusal = write_refusal(d)
    if refusal:
        raise InputError(f"cannot write the run to {d}: folder is not writable ({refusal})")
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
        write_json(cfg_path, {**config, "kbqa_version": __version__})
    return read_records(rec_path)


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
    """Why ``rec`` is not a record written by :func:`~kbqa.evals.records.make_record`, or None."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not an object"
    for key, kind in _RECORD_FIELDS.items():
        if not isinstance(rec.get(key), kind):
            return f"field {key!r} missing or of the wrong type"
    return None


def read_records(path: Path, *, repair: bool = True) -> dict[str, dict[str, Any]]:
    """Finished records by ``qid``.

    A torn last line (no newline, or not JSON: a run killed mid-write) is left out with a
    warning, and cut off the file when ``repair``. Anything else that is not a record is an
    error, and the file is left as is.

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
            # a reader (repair off) has no --overwrite to offer; only `kbqa eval` has
            remedy = "remove that line" + (" or start over with --overwrite" if repair else "")
            raise InputError(f"{path}:{lineno} is not a kbqa record ({problem}); {remedy}")
        assert isinstance(rec, dict)
        done[rec["qid"]] = rec
        good += len(line)
    if good < len(data) and repair:
        log.warning("%s: dropping a torn last record (%d bytes)", path, len(data) - good)
        with path.open("r+b") as fh:
            fh.truncate(good)
    elif good < len(data):  # a reader: the file stays as it is, but the figures leave it out
        log.warning(
            "%s: a torn last record (%d bytes, a run killed mid-write) is left out of these "
            "figures; `kbqa eval` with the same --out resumes the run and cuts it",
            path,
            len(data) - good,
        )
    return done


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
    records = list(read_records(d / RECORDS_FILE, repair=False).values())
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
