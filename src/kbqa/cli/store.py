"""``kbqa index --store milvus://...``: copy a built index into Milvus
(:mod:`kbqa.stores.milvus`)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from kbqa.cli.app import fail
from kbqa.errors import KBQAError


def check_store(store: str, *, later: bool) -> None:
    """Exit, before any build, on a bad ``--store`` URI, a missing Milvus extra, a Milvus Lite
    path that cannot be written (a file that is not a store, a missing or read-only folder) or
    ``--dense later`` (the store is written from a complete index)."""
    from kbqa.stores.milvus.uri import EXTRA_HINT, check_lite_path, parse_store_uri

    if later:
        fail(
            "--store copies a complete index: build it with --dense now (or run `kbqa index "
            "--continue` first, then `kbqa index --out DIR --store URI`)"
        )
    try:
        parsed = parse_store_uri(store)
        import pymilvus  # noqa: F401

        if parsed.is_lite:
            import milvus_lite  # noqa: F401

            check_lite_path(parsed, create=True)
    except KBQAError as exc:
        fail(str(exc))
    except ImportError:
        fail(f"--store {store} needs the Milvus extra: {EXTRA_HINT}")


def write_to_store(out: Path, store: str) -> None:
    """Write the index ``out`` into ``store`` (replacing it) and say what was written; exit
    with the error on failure."""
    from kbqa.index import is_index_dir
    from kbqa.stores.milvus import parse_store_uri, write_store

    if not is_index_dir(out):
        fail(
            f"{out} is not a kbqa index: build one (kbqa index KB --out {out}) to write it "
            "into the store"
        )
    t0 = time.perf_counter()
    try:
        written = write_store(out, parse_store_uri(store), replace=True)
    except KBQAError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(
            f"interrupted: {store} is as it was (the collections being written were dropped); "
            f"write it again with  kbqa index --out {out} --store '{store}'",
            err=True,
        )
        raise typer.Exit(code=130) from None
    parts = ", ".join(f"{name} {n} chunks" for name, n in written.items())
    typer.echo(f"store written  {store}: {parts} ({time.perf_counter() - t0:.1f} s)")
    typer.echo(f"ask it with    kbqa ask --index '{store}' QUESTION")
