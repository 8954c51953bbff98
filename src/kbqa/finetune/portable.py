"""What a manifest may say about files: names, never a path on this machine."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

PATH_SETTINGS = (
    "train",
    "kb",
    "index",
    "out",
    "resume_from",
    "init_adapter",
    "checkpoint_copy",
    "base_model",
    "reader_model",
    "reader_adapter",
)
"""Settings that name files: the manifest keeps no machine's absolute paths."""


def portable_path(value: object) -> object:
    """An absolute path's file name; anything else as it is."""
    return Path(value).name if isinstance(value, str) and os.path.isabs(value) else value


def portable_command(command: str) -> str:
    """``command`` with every absolute path (also in ``--flag=/path``) cut to its file name."""
    words = []
    for word in shlex.split(command):
        flag, eq, value = word.partition("=")
        if eq and flag.startswith("-"):
            words.append(f"{flag}={portable_path(value)}")
        else:
            words.append(str(portable_path(word)))
    return shlex.join(words)
