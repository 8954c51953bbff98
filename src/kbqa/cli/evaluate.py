"""``kbqa eval``: score the graph on a question file (``eval run``, the default), rewrite a run's
report (``eval report``), or draft questions from an index (``eval generate``)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from kbqa.cli.app import app, fail
from kbqa.cli.ask import make_context, out_of_memory, warn_fallback_unavailable
from kbqa.cli.settings import context_options, option_args
from kbqa.errors import KBQAError, ModelError


class _DefaultRunGroup(TyperGroup):
    """``kbqa eval QUESTIONS ...`` means ``kbqa eval run QUESTIONS ...``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = typer.Typer(
    cls=_DefaultRunGroup,
    no_args_is_help=True,
    help="Evaluate: `kbqa eval QUESTIONS` (= `eval run`), `eval generate`, `eval report`.",
)
app.add_typer(eval_app, name="eval")


def _default_run_dir(
    questions: Path, model: str, ablate: bool, models: str | None, index_dir: Path
) -> Path:
    from kbqa.evals.ablation import model_tag
    from kbqa.evals.run_dir import index_identity

    data_tag = f"{questions.resolve().parent.name}-{questions.stem}"
    what = "ablate" if ablate else "models" if models is not None else model_tag(model)
    strategy = (index_identity(index_dir) or {}).get("strategy")
    suffix = f"-{strategy}" if strategy and strategy != "coverage" else ""
    return Path("runs") / f"eval-{data_tag}-{what}{suffix}"


@eval_app.command("run")
@context_options()
def eval_run(
    questions: Annotated[
        Path, typer.Argument(help="Question file: .jsonl (shared/data format) or .csv.")
    ],
    limit: Annotated[int | None, typer.Option(help="Evaluate only the first N questions.")] = None,
    sample: Annotated[
        int | None, typer.Option(help="Evaluate a random sample of N questions.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for --sample.")] = 0,
    disjoint_from: Annotated[
        str,
        typer.Option(
            help="Comma-separated seeds whose --sample of the same size this one leaves out, "
            "so the two share no question (a second sample for a choice tuned on the first)."
        ),
    ] = "",
    out: Annotated[
        str | None,  # a str, so that an empty --out is an error, not Path("") = the current folder
        typer.Option(
            "--out",
            "-o",
            help="Run directory (records.jsonl, summary.json, report.md, plots/). Re-running "
            "into it resumes. Default: runs/eval-<data folder>-<file>-<model>[-precision].",
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Discard an earlier run in --out instead of resuming it.")
    ] = False,
    ablate: Annotated[
        bool, typer.Option(help="Also re-run the sample with stages switched off; one table.")
    ] = False,
    models: Annotated[
        str | None,
        typer.Option(help="Comma-separated models to compare (each in its own process)."),
    ] = None,
    max_concurrency: Annotated[
        int, typer.Option(help="Questions in flight (1 suits one local model).")
    ] = 1,
    dataset_name: Annotated[
        str | None,
        typer.Option(help="LangSmith dataset to create/extend when LANGSMITH_API_KEY is set."),
    ] = None,
    report: Annotated[bool, typer.Option(help="Write report.md and plots.")] = True,
    *,
    settings: dict[str, Any],
) -> None:
    """Score the graph on a question file: EM, F1, containment, abstention, recall@k,
    answer-in-context, trajectory, stage attribution; resumable; report with plots."""
    # Length: most of it is the command's own options; the work is in kbqa.evals.
    from kbqa.evals.datasets import load_questions, select
    from kbqa.evals.report import write_report
    from kbqa.evals.run_dir import run_config
    from kbqa.evals.runner import evaluate_questions
    from kbqa.index import source_sha256
    from kbqa.tracing import flush_traces

    for name, value in (("limit", limit), ("sample", sample)):
        if value is not None and value <= 0:
            fail(f"--{name} must be > 0, got {value}")
    if max_concurrency < 1:
        fail(f"--max-concurrency must be >= 1, got {max_concurrency}")
    if ablate and models is not None:
        fail("use --ablate or --models, not both")
    try:
        others = sorted({int(s) for s in disjoint_from.split(",") if s.strip()})
    except ValueError:
        fail(f"--disjoint-from takes comma-separated seeds (whole numbers), got {disjoint_from!r}")
    # random.Random(-s) draws what random.Random(s) draws: a negative seed would be another's
    for name, values in (("--seed", [seed]), ("--disjoint-from", others)):
        if any(v < 0 for v in values):
            fail(f"{name} takes seeds >= 0 (a negative seed draws the sample of its absolute "
                 f"value), got {', '.join(map(str, values))}")  # fmt: skip
    if out is not None and not out.strip():
        fail("--out is empty: give a run directory, or leave --out out for the default")
    ctx = make_context(settings)
    warn_fallback_unavailable(ctx)
    if out is None:
        run_dir = _default_run_dir(questions, ctx.model, ablate, models, Path(ctx.index_dir))
    else:
        run_dir = Path(out)
    if models is None:
        from kbqa.resources import check_models

        try:  # a misspelt model or a bad adapter stops the run before any question
            check_models(ctx)
        except ModelError as exc:
            fail(str(exc))
    qs: list[Any] = []
    try:
        all_qs = load_questions(questions)
        if sample is not None and sample > len(all_qs) and not others:
            typer.echo(
                f"note: --sample {sample} but {questions} has {len(all_qs)} questions; "
                "evaluating all of them",
                err=True,
            )
        qs = select(all_qs, limit=limit, sample=sample, seed=seed, disjoint_from=others)
        if others and sample is not None and len(qs) < min(sample, limit or sample):
            typer.echo(f"note: --disjoint-from leaves {len(qs)} questions; evaluating them all",
                       err=True)  # fmt: skip
        if models is not None:
            shared = [
                str(questions),
                "--seed",
                str(seed),
                "--max-concurrency",
                str(max_concurrency),
            ]
            shared += ["--sample", str(sample)] if sample else []
            shared += ["--disjoint-from", disjoint_from] if others else []
            shared += ["--limit", str(limit)] if limit else []
            shared += ["--overwrite"] if overwrite else []
            shared += [] if report else ["--no-report"]
            _compare_models(models, settings, shared, run_dir, report=report)
            return
        config = run_config(
            questions,
            source_sha256(questions),
            ctx,
            sample=sample,
            limit=limit,
            seed=seed,
            disjoint_from=others,
        )
        from kbqa.evals.ablation import ABLATION_KEYS, llm_cache, run_ablations
        from kbqa.evals.report import markdown_table

        with llm_cache() if ablate else contextlib.nullcontext():
            run = evaluate_questions(
                qs,
                ctx,
                run_dir,
                config=config,
                overwrite=overwrite,
                max_concurrency=max_concurrency,
                dataset_name=dataset_name,
            )
            if ablate:
                rows = run_ablations(
                    qs, ctx, run_dir, config=config, full_summary=run.summary, overwrite=overwrite
                )
                cols = ["name", *ABLATION_KEYS]
                typer.echo(markdown_table(cols, [[r.get(c) for c in cols] for r in rows]))
        if report:
            typer.echo(f"report: {write_report(run_dir, run.records, run.summary)}")
    except (KBQAError, ValueError, OSError) as exc:
        fail(str(exc))
    except MemoryError as exc:
        fail(out_of_memory(exc, ctx))
    except (KeyboardInterrupt, SystemExit) as exc:  # Ctrl-C, or SIGTERM (see main)
        _interrupted(exc, Path(run_dir), len(qs))
    finally:
        flush_traces()
    typer.echo(format_summary(run.summary))
    typer.echo(f"run directory: {run_dir}")
    if run.records and run.summary.get("errors") == len(run.records):
        first = next(r["error"] for r in run.records if "error" in r)
        fail(f"every question failed; the first error: {first}")


def _compare_models(
    models: str, settings: dict[str, Any], shared: list[str], run_dir: Path, *, report: bool
) -> None:
    """``--models``: evaluate each model in its own process, with the same settings (the same
    options, from :func:`~kbqa.cli.settings.option_args`), and print one table."""
    from kbqa.evals.ablation import run_models
    from kbqa.evals.report import markdown_table, write_report
    from kbqa.llm.models import check_model_name

    names = list(dict.fromkeys(m.strip() for m in models.split(",") if m.strip()))
    if not names:
        fail("--models lists no model")
    for name in names:
        check_model_name(name)
    if settings.get("reader_adapter"):
        fail("--reader-adapter applies to one model; not with --models")
    if Path(run_dir).exists() and not Path(run_dir).is_dir():
        fail(f"cannot write the run to {run_dir}: it is a file")
    per_model = {k: v for k, v in settings.items() if k != "model"}
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    rows = run_models(names, [*shared, *option_args(per_model)], run_dir)
    cols = ["name", "token_f1", "exact_match", "recall@3", "seconds_per_question_median",
            "peak_rss_mib"]  # fmt: skip
    typer.echo(markdown_table(cols, [[r.get(c) for c in cols] for r in rows]))
    if report:
        header = {"model": ", ".join(names), "index_dir": str(settings.get("index_dir"))}
        typer.echo(f"report: {write_report(run_dir, [], header)}")


def _interrupted(exc: BaseException, run_dir: Path, n_questions: int) -> NoReturn:
    """Say how many questions were saved, then exit at once: langsmith.evaluate's worker thread
    would otherwise go on through the remaining questions (unrecorded) before the interpreter
    could exit. Every record is already flushed and the partial summary written."""
    from kbqa.tracing import flush_traces

    records = run_dir / "records.jsonl"
    if records.is_file():
        with records.open("rb") as fh:
            saved = sum(1 for _ in fh)
        typer.echo(
            f"\ninterrupted: {saved} of {n_questions} questions saved in {run_dir}; "
            "run the same command again to resume",
            err=True,
        )
    flush_traces()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exc.code if isinstance(exc, SystemExit) and isinstance(exc.code, int) else 130)


def format_summary(summary: dict[str, Any]) -> str:
    """Headline figures as an aligned two-column table."""
    from kbqa.evals.report import summary_rows

    rows = summary_rows(summary)
    h = summary.get("harness")
    if isinstance(h, dict):
        ratio = h.get("overhead_ratio")
        rows += [
            ["graph wall s (sum)", f"{h['graph_seconds']:.1f}"],
            ["eval wall s", f"{h['wall_seconds']:.1f}"],
            ["harness overhead", "n/a" if ratio is None else f"{ratio * 100:+.1f}% of graph time"],
        ]
    width = max(len(str(r[0])) for r in rows)

    def show(value: object) -> str:
        if value is None:
            return "n/a"
        return f"{value:.4f}" if isinstance(value, float) else str(value)

    return "\n".join(f"{r[0]!s:<{width}}  {show(r[1])}" for r in rows)


@eval_app.command("report")
def eval_report(
    run_dir: Annotated[Path, typer.Argument(help="Run directory written by `kbqa eval`.")],
    plots: Annotated[bool, typer.Option(help="Draw PNG plots.")] = True,
) -> None:
    """Recompute summary.json from the records (unless the run is partial) and rewrite
    report.md and plots/ for a run directory (or a --models parent directory)."""
    from kbqa.evals.report import write_report
    from kbqa.evals.run_dir import load_run, write_json

    try:
        if not (run_dir / "records.jsonl").exists() and (run_dir / "models.json").is_file():
            path = write_report(run_dir, [], {}, plots=plots)  # a --models parent directory
        else:
            run = load_run(run_dir)
            if not run.summary.get("partial"):
                write_json(run_dir / "summary.json", run.summary)
            path = write_report(run_dir, run.records, run.summary, plots=plots)
    except (KBQAError, OSError, ValueError) as exc:
        fail(str(exc))
    typer.echo(f"report: {path}")


GENERATE_SETTINGS = ("index_dir", "model", "embedder", "n_ctx")
"""The settings ``eval generate`` uses (it retrieves nothing and answers nothing)."""


@eval_app.command("generate")
@context_options(only=GENERATE_SETTINGS)
def eval_generate(
    n: Annotated[int, typer.Option("--n", help="QA pairs to draft.")] = 200,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Question file to write (.jsonl).")
    ] = Path("generated.qa.jsonl"),
    seed: Annotated[int, typer.Option(help="Chunk sampling seed.")] = 0,
    overwrite: Annotated[bool, typer.Option(help="Replace an existing --out file.")] = False,
    *,
    settings: dict[str, Any],
) -> None:
    """Draft QA pairs from sampled chunks of an index, flagged needs_review, for a dev set of
    your own knowledge base. The LLM is asked to reply `Question: ...` / `Answer: ...`; a pair is
    kept when the answer is a verbatim span of the chunk (at most 8 words), not in the title and
    not in the question; one per document; at most 3n chunks are tried."""
    from kbqa.evals.question_generation import generate_questions

    if n <= 0:
        fail(f"--n must be > 0, got {n}")
    if out.is_dir():
        fail(f"cannot write questions to {out}: it is a directory")
    if out.exists() and not overwrite:
        fail(f"{out} exists; pass --overwrite to replace it")
    if out.parent.exists() and not out.parent.is_dir():
        fail(f"cannot write questions to {out}: {out.parent} is a file")
    ctx = make_context(settings)
    try:
        stats = generate_questions(ctx, n, out, seed=seed)
    except (KBQAError, ValueError, OSError) as exc:
        fail(str(exc))
    typer.echo(f"kept {stats['kept']} of {stats['tried']} drafted pairs in {stats['seconds']} s")
    for reason, count in sorted(stats["rejected"].items(), key=lambda kv: -kv[1]):
        typer.echo(f"  rejected ({reason}): {count}")
    if not stats["kept"]:
        fail(f"no drafted pair passed the checks; nothing written to {out}")
    typer.echo(f"questions written to {out} (needs_review: true; check them before use)")
