"""``kbqa eval``: score the graph on a question file (``eval run``, the default), rewrite a run's
report (``eval report``), or draft questions from an index (``eval generate``)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from kbqa.cli.app import app, fail
from kbqa.cli.ask import make_context, out_of_memory, warn_fallback_unavailable
from kbqa.cli.settings import context_options, option_args
from kbqa.errors import InputError, KBQAError, ModelError

if TYPE_CHECKING:
    from kbqa.context import Context
    from kbqa.evals.run_dir import EvalRun


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


def _default_run_dir(questions: Path, ctx: Context, ablate: bool, models: str | None) -> Path:
    from kbqa.evals.ablation import model_tag
    from kbqa.evals.run_dir import index_identity

    data_tag = f"{questions.resolve().parent.name}-{questions.stem}"
    what = "ablate" if ablate else "models" if models is not None else model_tag(ctx.model)
    if (ctx.model_en or ctx.reader_adapter_en) and models is None:  # another English reader
        model, adapter = ctx.reader_for("en")
        what += f"-en-{model_tag(model)}" + (f"-{model_tag(Path(adapter).name)}" if adapter else "")
    strategy = (index_identity(Path(ctx.index_dir)) or {}).get("strategy")
    suffix = f"-{strategy}" if strategy and strategy != "coverage" else ""
    return Path("runs") / f"eval-{data_tag}-{what}{suffix}"


@eval_app.command("run")
@context_options()
def eval_run(
    questions: Annotated[
        Path, typer.Argument(help="Question file: .jsonl (kbqa's question format) or .csv.")
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
    from kbqa.evals.report import write_report
    from kbqa.tracing import flush_traces

    selection = _Selection.from_options(questions, limit, sample, seed, disjoint_from)
    _check_run_options(max_concurrency, ablate, models, out)
    ctx = make_context(settings)
    warn_fallback_unavailable(ctx)
    run_dir = Path(out) if out is not None else _default_run_dir(questions, ctx, ablate, models)
    if models is None:
        _check_models(ctx)
    qs: list[Any] = []
    try:
        qs = selection.load()
        if models is not None:
            shared = [*selection.args(), "--max-concurrency", str(max_concurrency)]
            shared += (["--overwrite"] if overwrite else []) + ([] if report else ["--no-report"])
            return _compare_models(models, settings, shared, run_dir, report=report)
        config = selection.run_config(ctx)
        run = _evaluate(qs, ctx, run_dir, config, overwrite, max_concurrency, dataset_name, ablate)
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
    _print_run(run, run_dir)


def _check_run_options(
    max_concurrency: int, ablate: bool, models: str | None, out: str | None
) -> None:
    """Stop with a message on ``--max-concurrency``, ``--ablate`` with ``--models``, or an empty
    ``--out``."""
    if max_concurrency < 1:
        fail(f"--max-concurrency must be >= 1, got {max_concurrency}")
    if ablate and models is not None:
        fail("use --ablate or --models, not both")
    if out is not None and not out.strip():
        fail("--out is empty: give a run directory, or leave --out out for the default")


def _check_models(ctx: Context) -> None:
    """Stop with a message on a misspelt model or a bad adapter, before any question."""
    from kbqa.resources import check_models

    try:
        check_models(ctx)
    except ModelError as exc:
        fail(str(exc))


def _print_run(run: EvalRun, run_dir: Path) -> None:
    """Print a finished run's headline figures; stop (exit 1) when every question failed."""
    from kbqa.evals.report import summary_text

    typer.echo(summary_text(run.summary))
    typer.echo(f"run directory: {run_dir}")
    if run.records and run.summary.get("errors") == len(run.records):
        first = next(r["error"] for r in run.records if "error" in r)
        fail(f"every question failed; the first error: {first}")


@dataclass(frozen=True)
class _Selection:
    """The questions ``kbqa eval run`` scores: the file and its ``--limit``, ``--sample``,
    ``--seed`` and ``--disjoint-from`` (the seeds, sorted and distinct)."""

    questions: Path
    limit: int | None
    sample: int | None
    seed: int
    disjoint_from: list[int]

    @classmethod
    def from_options(
        cls, questions: Path, limit: int | None, sample: int | None, seed: int, disjoint_from: str
    ) -> _Selection:
        """The selection the options ask for; stops with a message on one out of range."""
        for name, value in (("limit", limit), ("sample", sample)):
            if value is not None and value <= 0:
                fail(f"--{name} must be > 0, got {value}")
        try:
            others = sorted({int(s) for s in disjoint_from.split(",") if s.strip()})
        except ValueError:
            given = repr(disjoint_from)
            fail(f"--disjoint-from takes comma-separated seeds (whole numbers), got {given}")
        # random.Random(-s) draws what random.Random(s) draws: a negative seed would be another's
        for name, values in (("--seed", [seed]), ("--disjoint-from", others)):
            if any(v < 0 for v in values):
                listed = ", ".join(map(str, values))
                fail(
                    f"{name} takes seeds >= 0 (a negative seed draws the sample of its "
                    f"absolute value), got {listed}"
                )
        return cls(questions, limit, sample, seed, others)

    def load(self) -> list[Any]:
        """The selected questions, with a note when the sample asks for more than there are.

        Raises:
            KBQAError, ValueError, OSError: from :func:`~kbqa.evals.datasets.load_questions`.
        """
        from kbqa.evals.datasets import load_questions, select

        all_qs = load_questions(self.questions)
        sample, others = self.sample, self.disjoint_from
        if sample is not None and sample > len(all_qs) and not others:
            typer.echo(
                f"note: --sample {sample} but {self.questions} has {len(all_qs)} questions; "
                "evaluating all of them",
                err=True,
            )
        qs = select(all_qs, limit=self.limit, sample=sample, seed=self.seed, disjoint_from=others)
        if others and sample is not None and len(qs) < min(sample, self.limit or sample):
            typer.echo(
                f"note: --disjoint-from leaves {len(qs)} questions; evaluating them all", err=True
            )
        return qs

    def args(self) -> list[str]:
        """The selection as ``kbqa eval run`` arguments (for each model of ``--models``)."""
        args = [str(self.questions), "--seed", str(self.seed)]
        args += ["--sample", str(self.sample)] if self.sample else []
        args += (
            ["--disjoint-from", ",".join(map(str, self.disjoint_from))]
            if self.disjoint_from
            else []
        )
        args += ["--limit", str(self.limit)] if self.limit else []
        return args

    def run_config(self, ctx: Context) -> dict[str, Any]:
        """The run's configuration (:func:`~kbqa.evals.run_dir.run_config`): a resumed run
        must have the same."""
        from kbqa.evals.run_dir import run_config
        from kbqa.index import source_sha256

        return run_config(
            self.questions,
            source_sha256(self.questions),
            ctx,
            sample=self.sample,
            limit=self.limit,
            seed=self.seed,
            disjoint_from=self.disjoint_from,
        )


def _evaluate(
    qs: list[Any],
    ctx: Context,
    run_dir: Path,
    config: dict[str, Any],
    overwrite: bool,
    max_concurrency: int,
    dataset_name: str | None,
    ablate: bool,
) -> EvalRun:
    """Run the questions (and, with ``ablate``, the ablations, printing their table); return
    the :class:`~kbqa.evals.runner.EvalRun` of the full graph."""
    from kbqa.evals.ablation import ABLATION_KEYS, llm_cache, run_ablations
    from kbqa.evals.report import markdown_table
    from kbqa.evals.runner import evaluate_questions

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
    return run


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
    if settings.get("model_en") or settings.get("reader_adapter_en"):
        fail(
            "--model-en and --reader-adapter-en would read every model's English; not with --models"
        )
    if Path(run_dir).exists() and not Path(run_dir).is_dir():
        fail(f"cannot write the run to {run_dir}: it is a file")
    per_model = {k: v for k, v in settings.items() if k != "model"}
    Path(run_dir).mkdir(parents=True, exist_ok=True)
    rows = run_models(names, [*shared, *option_args(per_model)], run_dir)
    cols = ["name", "token_f1", "exact_match", "recall@3", "seconds_per_question_median"]
    cols += ["peak_rss_mib"]
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


def _check_records_kept(run_dir: Path, n_records: int) -> None:
    """Refuse to rewrite a summary from fewer records than it counted (an emptied or cut
    ``records.jsonl``: a break-it finding, where ``eval report`` replaced a 3-question summary
    by one of 0).

    Raises:
        InputError: No record, or fewer than ``summary.json`` counted.
    """
    summary = run_dir / "summary.json"
    try:
        counted = json.loads(summary.read_text(encoding="utf-8")).get("questions")
    except (OSError, ValueError, AttributeError):
        counted = None
    if n_records == 0:
        raise InputError(f"{run_dir / 'records.jsonl'} holds no record: nothing to report")
    if isinstance(counted, int) and n_records < counted:
        raise InputError(
            f"{run_dir / 'records.jsonl'} holds {n_records} records but {summary} counted "
            f"{counted}: not rewriting it from fewer (run `kbqa eval` with the same --out to "
            "finish the run)"
        )


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
            _check_records_kept(run_dir, len(run.records))
            if not run.summary.get("partial"):
                write_json(run_dir / "summary.json", run.summary)
            path = write_report(run_dir, run.records, run.summary, plots=plots)
    except (KBQAError, OSError, ValueError) as exc:
        fail(str(exc))
    typer.echo(f"report: {path}")
