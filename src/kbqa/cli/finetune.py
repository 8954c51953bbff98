"""``kbqa finetune``: the command-line face of :mod:`kbqa.finetune`.

The flags of ``kbqa finetune reader`` are the fields of :class:`~kbqa.finetune.config.
ReaderConfig`, parsed by transformers' ``HfArgumentParser`` (``--time-budget`` and
``--time_budget`` both work), so each setting is declared once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated, Any

import typer

from kbqa.errors import KBQAError

INSTALL_HINT = "bash scripts/setup.sh finetune, or pip install 'kbqa[finetune]'"
finetune_app = typer.Typer(
    no_args_is_help=True,
    help="Fine-tune the reader with LoRA on the CPU (needs the finetune extra: "
    "bash scripts/setup.sh finetune).",
)

_PASS_THROUGH = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def _fail(message: str, code: int = 2) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=code)


@finetune_app.command("reader", context_settings=_PASS_THROUGH, add_help_option=False)
def reader(ctx: typer.Context) -> None:
    """Train a LoRA reader on QA pairs over a knowledge base and export it for llama.cpp.

    `kbqa finetune reader --help` lists every flag.
    """
    manifest, out = _run("reader", list(ctx.args))
    _report(manifest, out)
    typer.echo(f"serve it with  kbqa ask ... --reader-adapter {out}/adapter")


@finetune_app.command("verifier", context_settings=_PASS_THROUGH, add_help_option=False)
def verifier(ctx: typer.Context) -> None:
    """Train a LoRA verifier on the tuned reader's own answers and export it for llama.cpp.

    `kbqa finetune verifier --help` lists every flag.
    """
    manifest, out = _run("verifier", list(ctx.args))
    _report(manifest, out)
    val = manifest["validation"]
    typer.echo(
        f"verification   F1 {val['f1_before']:.3f} -> {val['f1_after']:.3f} over {val['n']}: "
        f"changed {val['changed']}, helped {val['helped']}, hurt {val['hurt']}"
    )
    typer.echo(f"serve it with  kbqa ask ... --verify --verifier-adapter {out}/adapter")


@finetune_app.command("reranker", context_settings=_PASS_THROUGH, add_help_option=False)
def reranker(ctx: typer.Context) -> None:
    """Train an LLM reranker (Gemma with LoRA, yes/no on a question-passage pair) and export it
    for llama.cpp.

    `kbqa finetune reranker --help` lists every flag.
    """
    manifest, out = _run("reranker", list(ctx.args))
    ex, tr, val = manifest["examples"], manifest["training"], manifest["validation"]
    typer.echo(f"adapter written to {out}/adapter ({manifest['adapter_bytes'] / 2**20:.1f} MiB)")
    typer.echo(f"pairs          {ex['by_kind']} from {ex['usable']} of {ex['questions']} questions")
    typer.echo(
        f"training       {tr['steps']} steps, {tr['train_seconds'] / 60:.1f} min, "
        f"{tr['seconds_per_step']} s/step, peak RSS {tr['peak_rss_mib']} MiB"
    )
    if "skipped" in val:
        typer.echo(f"validation     skipped: {val['skipped']}")
    for name in ("fused", "reranked"):
        if name in val:
            m = val[name]
            typer.echo(
                f"{name:<14} recall@1 {m['recall@1']:.3f}, recall@3 "
                f"{m['recall@3']:.3f}, MRR@10 {m['mrr@10']:.3f} (n={m['n']})"
            )
    cost = (
        f" ({val['ms_per_question']} ms a question for a pool of {val['pool']})"
        if val.get("ms_per_question") is not None
        else ""
    )
    typer.echo(f"serve it with  kbqa ask ... --reranker {out}/adapter{cost}")


def _config_class(role: str) -> Any:
    from kbqa.finetune.config import ReaderConfig
    from kbqa.finetune.reranker import RerankerConfig
    from kbqa.finetune.verifier import VerifierConfig

    return {"verifier": VerifierConfig, "reranker": RerankerConfig}.get(role, ReaderConfig)


def _first_paragraph(doc: str | None) -> str:
    """A docstring's first paragraph on one line, without reST's double backticks."""
    return " ".join((doc or "").strip().split("\n\n")[0].split()).replace("``", "")


def config_help(role: str) -> str:
    """``kbqa finetune ROLE --help``: every flag of the role's config (its dataclass fields, in
    their ``--dash-form``, with type, default and help), read without the finetune extra, so a
    user can see the options before installing torch (a new user's finding)."""
    import dataclasses

    config = _config_class(role)
    hidden = set(getattr(config, "READER_ONLY", ()))
    parser = argparse.ArgumentParser(
        prog=f"kbqa finetune {role}",
        description=f"{_first_paragraph(config.__doc__)} Needs the finetune "
        f"extra ({INSTALL_HINT}). Each flag may also be written with underscores.",
        add_help=False,
    )
    for f in dataclasses.fields(config):
        if f.name in hidden or not f.init:
            continue
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        said = "required" if required else f"default: {f.default!r}"
        parser.add_argument(
            f"--{f.name.replace('_', '-')}",
            metavar=str(f.type).upper() if str(f.type) != "bool" else "{true,false}",
            help=f"{f.metadata.get('help', '')} ({said})".replace("%", "%%"),
        )
    return parser.format_help()


def _run(role: str, args: list[str]) -> tuple[dict[str, Any], str]:
    """Parse ``args`` into the role's config and run its pipeline; exit with a clear error."""
    if "--help" in args or "-h" in args:
        typer.echo(config_help(role))
        raise typer.Exit(0)
    try:
        from transformers import HfArgumentParser
    except ImportError as exc:
        _fail(f"fine-tuning needs the finetune extra: {INSTALL_HINT} ({exc})")
    config = _config_class(role)
    parser = HfArgumentParser(config, prog=f"kbqa finetune {role}")
    unused = set(getattr(config, "READER_ONLY", ()))
    for action in parser._actions:  # argparse has no public way to hide an inherited option
        if action.dest in unused:
            action.help = argparse.SUPPRESS
    given = sorted(
        {
            flag
            for word in args
            for action in parser._actions
            if action.dest in unused
            for flag in action.option_strings
            if word.split("=")[0] == flag
        }
    )
    if given:
        _fail(f"{', '.join(given)}: a reader's setting, which kbqa finetune {role} does not use")
    try:
        (cfg,) = parser.parse_args_into_dataclasses(args=args)
    except ValueError as exc:
        _fail(str(exc))
    try:
        if role == "verifier":
            from kbqa.finetune.verifier import run_verifier_finetune

            manifest = run_verifier_finetune(cfg)
        elif role == "reranker":
            from kbqa.finetune.reranker import run_reranker_finetune

            manifest = run_reranker_finetune(cfg)
        else:
            from kbqa.finetune.reader import run_reader_finetune

            manifest = run_reader_finetune(cfg)
    except ImportError as exc:
        _fail(f"fine-tuning needs the finetune extra: {INSTALL_HINT} ({exc})")
    except KeyboardInterrupt:
        saved = sorted(Path(cfg.out, "checkpoints").glob("checkpoint-*"))
        where = f"the last checkpoint is in {cfg.out}/checkpoints" if saved else "nothing saved"
        typer.echo(
            f"interrupted: {where}; add --resume to the same command to continue "
            "(--resume-from CHECKPOINT on another machine)",
            err=True,
        )
        raise typer.Exit(code=130) from None
    except (KBQAError, ValueError, OSError) as exc:
        _fail(str(exc))
    return manifest, str(cfg.out)


def _report(m: dict[str, Any], out: str) -> None:
    ex, tr, val = m["examples"], m["training"], m["validation"]
    typer.echo(f"adapter written to {out}/adapter ({m['adapter_bytes'] / 2**20:.1f} MiB)")
    typer.echo(
        f"examples       {ex['usable']} usable of {ex['questions']} questions; train "
        f"{ex['by_kind'].get('train', {})}, val {ex['by_kind'].get('val', {})}"
    )
    typer.echo(
        f"training       {tr['steps']} steps, {tr['train_seconds'] / 60:.1f} min, "
        f"{tr['seconds_per_step']} s/step, {tr.get('tokens_per_second', 0)} tokens/s, "
        f"peak RSS {tr['peak_rss_mib']} MiB"
    )
    typer.echo(f"loss           train {tr['final_train_loss']}, validation {tr['eval_loss']}")
    if "f1" in val:  # a reader's (a verifier's: its own line)
        kinds = ", ".join(f"{k} {v['f1']:.3f} (n={v['n']})" for k, v in val["by_kind"].items())
        typer.echo(f"validation F1  {val['f1']:.3f} over {val['n']}: {kinds}")
    serving = m.get("serving", {})
    if serving:
        typer.echo(
            f"serving        abstention threshold {serving['abstention_threshold']}: "
            f"{serving['why']}"
        )


@finetune_app.command("export")
def export(
    checkpoint: Annotated[
        Path, typer.Argument(help="A checkpoint directory: OUT/checkpoints/checkpoint-N.")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Adapter directory to write.")],
    base_model: Annotated[
        str, typer.Option(help="The base the checkpoint was trained on.")
    ] = "gemma3-270m",
    role: Annotated[
        str,
        typer.Option(
            help="reader, verifier or reranker; default: the role of the adapter the "
            "checkpoint's run exported (OUT/adapter/manifest.json), else reader."
        ),
    ] = "",
) -> None:
    """Export a training checkpoint as a llama.cpp adapter (serve a reader with
    --reader-adapter, a verifier with --verifier-adapter, a reranker with --reranker)."""
    try:
        from kbqa.finetune.export import export_checkpoint

        adapter = export_checkpoint(checkpoint, out, base_model, role)
    except ImportError as exc:
        _fail(f"exporting needs the finetune extra: {INSTALL_HINT} ({exc})")
    except (KBQAError, OSError) as exc:
        _fail(str(exc))
    typer.echo(f"adapter written to {adapter}")


@finetune_app.command("squad")
def squad(
    squad_file: Annotated[
        Path, typer.Argument(help="A SQuAD v1.1 or v2.0 JSON file (its train split).")
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write into.")],
    prefix: Annotated[str, typer.Option(help="File names: PREFIX.qa.jsonl, PREFIX_kb.jsonl.")] = (
        "en_train"
    ),
    source: Annotated[str, typer.Option(help="The 'source' field of every line.")] = (
        "SQuAD-train"
    ),
) -> None:
    """Convert a SQuAD file into training questions and a knowledge base for `kbqa finetune
    reader --train ... --kb ...` (unanswerable v2.0 questions become abstention examples)."""
    from kbqa.finetune.squad import write_squad_jsonl

    try:
        qa, kb, counts = write_squad_jsonl(squad_file, out, prefix, source)
    except (KBQAError, OSError) as exc:
        _fail(str(exc))
    typer.echo(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    typer.echo(f"questions      {qa}\nknowledge base {kb}")
