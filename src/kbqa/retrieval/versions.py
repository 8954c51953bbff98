"""Publishing an index so that readers see the old one or the new one, never a mix.

An index path ``DIR`` is a symbolic link to a complete, never-modified build in a sibling
version directory ``.DIR.v-<time>-<pid>``. A build writes its version directory in full, then
switches the link with one ``rename(2)`` of a new link over the old (atomic on POSIX): a reader
that resolves ``DIR`` once (:func:`resolve_index`) and reads every file from the version it got
cannot mix two builds, and an interrupted build leaves ``DIR`` pointing where it pointed. The
version the link replaced is kept (a reader may still be loading it); older ones are deleted.

An index of the earlier layout (``DIR`` a plain directory) is moved into a version directory
on its first rebuild; if that one move is interrupted, :func:`restore` puts the newest complete
version back at ``DIR`` (as it does for the ``.DIR.old-<pid>`` directories the earlier layout
could strand).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

log = logging.getLogger("kbqa.index")

MANIFEST = "manifest.json"


def absolute_path(path: str | Path) -> Path:
    """``path`` made absolute without following a link at its end (``DIR`` stays ``DIR``, not
    the version it points to), so locks, caches and temporary names stay the same across
    builds."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _versions(out: Path) -> list[Path]:
    """Version directories of ``out`` (and stranded ``.old-`` directories of the earlier
    layout), newest first."""
    found = [*out.parent.glob(f".{out.name}.v-*"), *out.parent.glob(f".{out.name}.old-*")]
    return sorted((p for p in found if p.is_dir() and not p.is_symlink()),
                  key=lambda p: p.stat().st_mtime_ns, reverse=True)  # fmt: skip


def _complete(version: Path) -> bool:
    try:
        json.loads((version / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def _switch_link(out: Path, target: Path) -> None:
    """Point ``out`` at ``target`` (a sibling) with one atomic rename of a new link."""
    link = out.parent / f".{out.name}.link-{os.getpid()}"
    link.unlink(missing_ok=True)
    os.symlink(target.name, link)  # relative: the folder holding both can be moved
    os.replace(link, out)


def restore(out: Path) -> Path | None:
    """When ``out`` is missing but a complete version of it is on disk (a build or a migration
    killed at the wrong moment), point ``out`` at the newest and return it; else None."""
    if out.exists():
        return None
    for version in _versions(out):
        if _complete(version):
            if version.name.startswith(f".{out.name}.old-"):  # the earlier layout's leftover
                moved = out.parent / f".{out.name}.v-{time.time_ns()}-restored"
                os.replace(version, moved)
                version = moved
            _switch_link(out, version)
            log.warning("index %s was missing; restored it from %s", out, version.name)
            return version
    return None


def resolve_index(path: str | Path) -> Path:
    """The directory to read an index from: the version ``path`` links to now (resolved once,
    so every file of one load comes from one build), ``path`` itself for a plain directory,
    or the restored version when ``path`` went missing (:func:`restore`)."""
    out = absolute_path(path)
    if not out.exists():
        restore(out)
    return out.resolve() if out.is_symlink() else out


def publish(tmp: Path, out: Path) -> None:
    """Make the finished build ``tmp`` the index ``out``.

    ``tmp`` becomes a version directory, then the link ``out`` is switched to it in one rename.
    An ``out`` of the earlier layout (a plain directory) is first moved into a version
    directory of its own. The version the link pointed to stays (a reader may be loading it);
    older versions, and stranded directories of killed builds, are deleted.
    """
    version = out.parent / f".{out.name}.v-{time.time_ns()}-{os.getpid()}"
    os.replace(tmp, version)
    previous: Path | None = None
    if out.is_symlink():
        previous = out.resolve()
    elif out.is_dir():  # the earlier layout: a plain directory
        previous = out.parent / f".{out.name}.v-{time.time_ns() - 1}-legacy"
        os.replace(out, previous)  # if killed here, restore() finds it
    _switch_link(out, version)
    for old in _versions(out):
        if old not in (version, previous):
            shutil.rmtree(old, ignore_errors=True)
