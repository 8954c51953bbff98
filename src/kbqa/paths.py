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
