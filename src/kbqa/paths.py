"""Checks on folders kbqa writes to."""

from __future__ import annotations

import tempfile
from pathlib import Path


def write_refusal(folder: str | Path) -> str | None:
    """Why a file cannot be created in ``folder`` (the operating system's reason, e.g.
    ``Read-only file system``), or None when one can.

    A real write of a temporary file, removed at once: ``os.access`` says yes to root on a
    read-only folder or mount, and SQLite and Milvus Lite write beside their files.
    """
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def in_the_way(folder: str | Path) -> str | None:
    """What stands where ``folder`` or one of its parents should be, so that the folder cannot
    be created (the OS says only "File exists" or "Not a directory"): ``"P is a file"``, ``"P is
    a broken link"``, or None."""
    for p in (Path(folder), *Path(folder).parents):
        if p.is_dir():
            return None
        if p.is_symlink() and not p.exists():
            return f"{p} is a broken link"
        if p.exists():
            return f"{p} is a file"
    return None
