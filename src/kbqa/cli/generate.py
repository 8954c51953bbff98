"""``kbqa eval generate``: draft QA pairs from an index, for a dev set of your own knowledge
base (:mod:`kbqa.evals.question_generation`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kbqa.cli.app import fail
from kbqa.cli.ask import make_context
from kbqa.cli.evaluate import eval_app
from kbqa.cli.settings import context_options
from kbqa.errors import KBQAError

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
