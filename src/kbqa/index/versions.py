"""Publishing an index so that readers see the old one or the new one, never a mix.

An index path ``DIR`` is a symbolic link to a complete build in a sibling version directory
``.DIR.v-<time>-<pid>`` (changed afterwards only by ``kbqa index --continue``, which adds its
dense files one atomic rename at a time and flips the manifest last). A build writes its
version directory in full, then switches the link with one ``rename(2)`` of a new link over
the old (atomic on POSIX): a reader that resolves ``DIR`` once (:func:`resolve_index`) and
reads every file from the version it got cannot mix two builds, and an interrupted build
leaves ``DIR`` pointing where it pointed. The version the link replaced is kept (a reader may
still be loading it); older ones are deleted.

An index of the earlier layout (``DIR`` a plain directory) is moved into a version directory
on its first rebuild; if that one move is interrupted, :func:`restore` puts it back at ``DIR``
(as it does for the ``.DIR.old-<pid>`` directories the earlier layout could strand). A ``DIR``
the user deleted is not brought back from its leftover versions. On a filesystem without
symbolic links the earlier layout is kept (rename aside, rename in). A link ``DIR`` that the
user made (to another disk, say) is followed, and the index is published where it points.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import re
import shutil
import time
from pathlib import Path

from kbqa.errors import InputError

log = logging.getLogger("kbqa.index")

MANIFEST = "manifest.json"
_VERSION_NAME = re.compile(r"\.(.+)\.v-\d+-(?:\d+|legacy)")
"""A version directory's name, ``.DIR.v-<time ns>-<pid>`` (``-legacy`` for a moved plain
directory): :func:`publish`."""


def absolute_path(path: str | Path) -> Path:
    """``path`` made absolute without following a link at its end (``DIR`` stays ``DIR``, not
    the version it points to), so locks, caches and temporary names stay the same across
    builds."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _versions(out: Path, *, stranded_only: bool = False) -> list[Path]:
    """Version directories of ``out`` (and stranded ``.old-`` directories of the earlier
    layout), newest first; ``stranded_only``: only those a killed migration or an earlier kbqa
    left (``-legacy`` versions and ``.old-`` directories)."""
    name = glob.escape(out.name)
    found = [p for p in out.parent.glob(f".{name}.old-*") if _named(p, out, "old")]
    found += [
        p
        for p in out.parent.glob(f".{name}.v-*-legacy" if stranded_only else f".{name}.v-*")
        if _named(p, out, "v")
    ]

    def age(p: Path) -> int:
        try:
            return p.stat().st_mtime_ns
        except OSError:  # deleted by a build meanwhile
            return 0

    return sorted((p for p in found if p.is_dir() and not p.is_symlink()), key=age, reverse=True)


def _named(path: Path, out: Path, kind: str) -> bool:
    """``path`` has the exact name kbqa gives a ``kind`` of ``out``'s: a version
    (``.NAME.v-<ns>-<pid>`` or ``-legacy``), a stranded ``.NAME.old-<pid>`` or a link being made
    (``.NAME.link-<pid>``). A user's ``.NAME.v-backup`` or ``.NAME.old-notes`` is not kbqa's to
    delete (a break-it finding)."""
    if kind == "v":
        found = _VERSION_NAME.fullmatch(path.name)
        return found is not None and found.group(1) == out.name
    return re.fullmatch(rf"\.{re.escape(out.name)}\.{kind}-\d+", path.name) is not None


def is_managed(out: Path) -> bool:
    """``out`` is a link kbqa made: it points at one of its own sibling version directories."""
    try:
        target = os.readlink(out)
    except OSError:
        return False
    return "/" not in target and target.startswith(f".{out.name}.v-")


def publish_path(path: str | Path) -> Path:
    """Where a build of ``path`` is published: ``path`` (absolute, its link kept), or, when
    ``path`` is a link the user made (not one of kbqa's), where it points, followed one link
    at a time and stopping at kbqa's own link: a user's link to an index ``DIR`` publishes
    ``DIR`` (a break-it trial: resolved to the end, it published into ``DIR``'s current version
    directory, which each rebuild then wrapped in one more version, until the names grew too
    long).

    A path that is one of kbqa's own version directories (a link made with ``readlink -f DIR``,
    or that name given itself) is refused: published there, a build nested a copy inside that
    version, and redirected to ``DIR``, it left the link on a version the next rebuild deletes
    (helpers' findings).

    Raises:
        InputError: ``path`` is a loop of symbolic links, or one build of an index or a path
            inside one (``DIR/sub`` for an index ``DIR``: a rebuild of ``DIR`` would delete it).
    """
    out = absolute_path(path)
    seen: set[Path] = set()
    while out.is_symlink() and not is_managed(out):
        if out in seen:
            raise InputError(f"{path} is a loop of symbolic links ({out} is reached twice)")
        seen.add(out)
        # relative to the folder the link is in, itself resolved: `..` in the target climbs
        # from where the link really is (an absolute target stays as it is)
        out = absolute_path(Path(os.path.realpath(out.parent)) / os.readlink(out))
    found = _in_a_build(out, Path(os.path.join(os.getcwd(), Path(path).expanduser())))
    if found is not None and found[2]:
        raise InputError(
            f"{path} is {out.name}, one build of the index {found[1]}, which a later rebuild "
            f"deletes: give {found[1]} itself, or a link to it (not to one of its builds)"
        )
    if found is not None and not is_sub_index(out):  # a part: the caller names it better
        raise InputError(
            f"{path} lies inside {found[0].name}, one build of the index {found[1]}, which a "
            f"later rebuild deletes: give a path outside {found[1]}"
        )
    return out


def is_sub_index(out: Path) -> bool:
    """``out`` is one strategy's part of a ``--strategy both`` directory (its parent's manifest
    lists it), which building and continuing refuse by name
    (:func:`kbqa.index.store.check_replaceable`)."""
    try:
        top = json.loads((out.parent / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(top, dict) and out.name in (top.get("indexes") or {})


def _in_a_build(out: Path, given: Path) -> tuple[Path, Path, bool] | None:
    """``(version, index, is out)`` when ``out`` is, or lies inside, a version directory of an index
    kbqa manages, else None. The folders above ``out`` are resolved as the kernel does (a
    ``link/../x`` the user gave climbs from where ``link`` points, ``given`` unnormalised);
    ``out`` itself is kept, as it may be an index's own link."""
    candidates = [out, Path(os.path.realpath(out.parent)) / out.name]
    if given.name not in ("", ".", ".."):
        candidates.append(Path(os.path.realpath(given.parent)) / given.name)
    for real in candidates:
        for folder in (real, *real.parents):
            owner = version_owner(folder)
            if owner is not None:
                return folder, owner, folder == real
    return None


def version_owner(version: Path) -> Path | None:
    """The index ``DIR`` whose version directory ``version`` is (``.DIR.v-<time>-<pid>`` beside
    ``DIR``, a link of kbqa's; also when that version is already deleted), or None for any other
    path."""
    found = _VERSION_NAME.fullmatch(version.name)
    if found is None or version.is_symlink():
        return None
    owner = version.parent / found.group(1)
    return owner if is_managed(owner) else None


def _complete(version: Path) -> bool:
    try:
        json.loads((version / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return True


def restore(out: Path) -> Path | None:
    """When ``out`` is missing because a migration or an earlier kbqa's rebuild was killed
    half-way, put the index it moved aside back at ``out`` and return it; else None (also when
    the folder cannot be written: the caller then reports the index missing)."""
    if out.exists() or out.is_symlink():
        return None  # present, or a link the user left dangling: not ours to mend
    for stranded in _versions(out, stranded_only=True):
        if not _complete(stranded):
            continue
        try:
            os.replace(stranded, out)
        except OSError:
            return None
        log.warning("index %s was missing; restored it from %s", out, stranded.name)
        return out
    return None


def resolve_index(path: str | Path) -> Path:
    """The directory to read an index from, resolved once so that every file of one load comes
    from one build: the version ``path`` links to now (also for a sub-index ``DIR/precision``
    of a linked ``DIR``), ``path`` itself for a plain directory, or the index put back by
    :func:`restore` when ``path`` went missing."""
    out = absolute_path(path)
    if not out.exists():
        restore(out)
    return out.resolve() if out.exists() else out


def publish(tmp: Path, out: Path) -> None:
    """Make the finished build ``tmp`` the index ``out``.

    ``tmp`` becomes a version directory, then the link ``out`` is switched to it in one rename.
    An ``out`` of the earlier layout (a plain directory) is first moved into a version
    directory of its own. The version the link pointed to stays (a reader may be loading it);
    older versions, and stranded directories of killed builds, are deleted. Where the
    filesystem has no symbolic links, the earlier layout is used: ``out`` renamed aside,
    ``tmp`` renamed in, the old one deleted.
    """
    for stale in out.parent.glob(f".{glob.escape(out.name)}.link-*"):  # from killed builds
        if stale.is_symlink() and _named(stale, out, "link"):  # (builds of one index are
            stale.unlink(missing_ok=True)  # serialised by its lock)
    link = out.parent / f".{out.name}.link-{os.getpid()}"
    version = out.parent / f".{out.name}.v-{time.time_ns()}-{os.getpid()}"
    try:
        os.symlink(version.name, link)  # made first: no links here means no switch either
    except OSError:
        _publish_without_links(tmp, out)
        return
    os.replace(tmp, version)
    previous: Path | None = None
    if out.is_symlink():
        previous = out.resolve()
    elif out.is_dir():  # the earlier layout: a plain directory
        previous = out.parent / f".{out.name}.v-{time.time_ns() - 1}-legacy"
        os.replace(out, previous)  # if killed here, restore() puts it back
    os.replace(link, out)
    keep = {version.resolve(), previous.resolve() if previous else None}
    for old in _versions(out):
        if old.resolve() not in keep:
            shutil.rmtree(old, ignore_errors=True)


def _publish_without_links(tmp: Path, out: Path) -> None:
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    if out.exists():
        os.replace(out, old)  # if killed here, restore() puts it back
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
