"""Index swaps (issue 15, items 4-5): a reader loading during rebuilds sees the old index or the
new one, never a mix; a build killed at any step leaves an index that loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kbqa.corpus.document import Document
from kbqa.embedders import NoEmbedder
from kbqa.index import build_index, load_index

WORDS = {"a": "alpha", "b": "beta"}


def docs(kind: str) -> list[Document]:
    """Two knowledge bases of the same shape (same chunk count), told apart by one word."""
    return [Document(f"{kind}{i}", f"{kind} {i}", f"{WORDS[kind]} পাতা {i} " * 20) for i in range(8)]


def which(index_dir: Path) -> str:
    """``a`` or ``b`` when chunks, BM25 vocabulary and manifest all come from one build, else
    ``mixed``."""
    index = load_index(index_dir)
    texts = {k for k in WORDS if any(WORDS[k] in c.text for c in index.chunks)}
    vocab = {k for k in WORDS if WORDS[k] in index.bm25.vocab_dict}
    built = {Path(index.manifest["source"]).name}
    return texts.pop() if len(texts) == 1 and texts == vocab == built else "mixed"


def test_readers_never_see_a_mixed_index_during_rebuilds(tmp_path: Path) -> None:
    """Before the fix, 33 of 13,093 loads over 44 rebuilds mixed two builds."""
    out = tmp_path / "idx"
    for kind in WORDS:
        (tmp_path / kind).write_text(kind)
    build_index(docs("a"), out, NoEmbedder(), source=tmp_path / "a", progress=False)
    seen: list[str] = []
    errors: list[str] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                seen.append(which(out))
            except Exception as exc:  # any failed load counts against the test
                errors.append(f"{type(exc).__name__}: {exc}")

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        for i in range(44):
            kind = "ab"[i % 2]
            build_index(docs(kind), out, NoEmbedder(), source=tmp_path / kind, progress=False)
    finally:
        done.set()
        for t in readers:
            t.join()
    assert len(seen) > 44 and seen.count("mixed") == 0 and not errors, (len(seen), errors[:3])
    assert {"a", "b"} <= set(seen)
    versions = [p for p in tmp_path.iterdir() if p.name.startswith(".idx.v-")]
    assert len(versions) <= 2  # the current build and the one it replaced


KILLER = r"""
import os, sys
from pathlib import Path
import kbqa.index.versions as versions
from kbqa.corpus.document import Document
from kbqa.embedders import NoEmbedder
from kbqa.index import build_index

stop_at, out, kind = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
calls = 0

def dying(fn):
    def step(*args, **kwargs):
        global calls
        calls += 1
        if calls == stop_at:
            os._exit(137)  # as kill -9: no cleanup runs
        return fn(*args, **kwargs)
    return step

for name in ("replace", "symlink"):
    setattr(versions.os, name, dying(getattr(os, name)))
versions.shutil.rmtree = dying(versions.shutil.rmtree)
docs = [Document(f"{kind}{i}", kind, f"{kind}word পাতা {i} " * 20) for i in range(8)]
source = out.parent / kind
source.write_text(kind)
build_index(docs, out, NoEmbedder(), source=source, progress=False)
print("steps", calls)
"""


def build_in_child(stop_at: int, out: Path, kind: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", KILLER, str(stop_at), str(out), kind],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip


@pytest.mark.parametrize("layout", ["link", "plain directory (earlier kbqa)"])
def test_a_rebuild_killed_at_any_step_leaves_an_index_that_loads(
    tmp_path: Path, layout: str
) -> None:
    """Before the fix, a kill between the two renames left `index not found` and stranded the
    old index in `.NAME.old-PID`."""
    counted = tmp_path / "count" / "idx"
    counted.parent.mkdir()
    (counted.parent / "old").write_text("old")
    build_index(docs("a"), counted, NoEmbedder(), source=counted.parent / "old", progress=False)
    full = build_in_child(0, counted, "new")  # how many steps a rebuild takes
    steps = int(full.stdout.split()[-1])
    assert steps >= 3
    for stop_at in range(1, steps + 2):
        root = tmp_path / f"kill{stop_at}"
        root.mkdir()
        out = root / "idx"
        (root / "old").write_text("old")
        build_index(docs("a"), out, NoEmbedder(), source=root / "old", progress=False)
        if layout != "link":  # an index as kbqa wrote it before versions: a plain directory
            real = out.resolve()
            out.unlink()
            os.replace(real, out)
        child = build_in_child(stop_at, out, "new")
        assert child.returncode in (0, 137), child.stderr
        index = load_index(out)  # never "index not found"
        built = Path(index.manifest["source"]).name
        assert built in ("old", "new")
        if child.returncode == 0:
            assert built == "new"
        assert not list(root.glob(".idx.old-*"))
        assert json.loads((out / "manifest.json").read_text())["chunks"] == len(index.chunks)


def test_a_users_own_link_is_followed_not_replaced(tmp_path: Path) -> None:
    elsewhere = tmp_path / "bigdisk" / "idx"
    elsewhere.parent.mkdir()
    out = tmp_path / "idx"
    out.symlink_to(elsewhere)  # the user keeps the index on another disk
    for _ in range(2):
        build_index(docs("a"), out, NoEmbedder(), progress=False)
    assert os.readlink(out) == str(elsewhere)  # the user's link is untouched
    assert len(load_index(out).chunks) == len(load_index(elsewhere).chunks) > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".idx")] == []


def test_a_users_link_to_an_index_publishes_that_index(tmp_path: Path) -> None:
    """A break-it trial: a link to an index kbqa manages was resolved to its version directory,
    which each rebuild through the link wrapped in one more version (a full copy each time)
    until the names grew too long and rebuilds failed."""
    out = tmp_path / "idx"
    build_index(docs("a"), out, NoEmbedder(), progress=False)
    (tmp_path / "aliases").mkdir()
    alias = tmp_path / "aliases" / "alias"
    alias.symlink_to(out)
    for kind in ("b", "a", "b", "a", "b", "a", "b", "a"):
        build_index(docs(kind), alias, NoEmbedder(), progress=False)
        for path in (alias, out):
            assert all(WORDS[kind] in c.text for c in load_index(path).chunks)
    assert os.readlink(alias) == str(out)  # the user's link is untouched
    versions = [p.name for p in tmp_path.iterdir() if p.name.startswith(".idx")]
    assert len(versions) == 2 and all(v.count(".v-") == 1 for v in versions), versions


def test_one_build_of_an_index_is_refused_as_an_out(tmp_path: Path) -> None:
    """Helpers' findings: a link made with ``readlink -f idx`` (to ``.idx.v-...``) published a
    copy nested in that version (``..idx.v-....v-...``), one more each rebuild; redirected to
    ``idx``, it left the link on a version the next rebuild deleted. Now it is refused, as is
    the version's own name, before anything is written."""
    from kbqa.errors import InputError

    out = tmp_path / "idx"
    build_index(docs("a"), out, NoEmbedder(), progress=False)
    version = out.resolve()
    pinned = tmp_path / "pinned"
    pinned.symlink_to(version)
    for given in (pinned, version):
        with pytest.raises(InputError, match=rf"one build of the index {out}.*give {out} itself"):
            build_index(docs("b"), given, NoEmbedder(), progress=False)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == [version.name]
    assert all(WORDS["a"] in c.text for c in load_index(pinned).chunks)  # still readable
    for kind in ("b", "a"):  # two rebuilds of idx delete the build the link points at
        build_index(docs(kind), out, NoEmbedder(), progress=False)
    with pytest.raises(InputError, match=rf"give {out} itself, or a link to it"):
        load_index(pinned)  # says why, not only "not found"
    # a folder merely named like a version, beside no index of that name, is the user's own
    lookalike = tmp_path / ".other.v-1-2"
    build_index(docs("b"), lookalike, NoEmbedder(), progress=False)
    assert all(WORDS["b"] in c.text for c in load_index(lookalike).chunks)


def test_a_path_inside_one_build_of_an_index_is_refused_as_an_out(tmp_path: Path) -> None:
    """Left from a break-it trial: ``--out idx/sub`` (``idx`` an index) built an index inside
    ``idx``'s current build, which a later rebuild of ``idx`` would delete; and ``link/..``
    reached a build by the kernel's ``..`` (from where ``link`` points) while the lexical path
    named none. Both are refused before anything is written."""
    from kbqa.errors import InputError

    out = tmp_path / "idx"
    build_index(docs("a"), out, NoEmbedder(), progress=False)
    version = out.resolve()
    with pytest.raises(InputError, match=rf"lies inside {version.name}.*outside {out}"):
        build_index(docs("b"), out / "sub", NoEmbedder(), progress=False)
    (version / "x").mkdir()  # a folder of the build, reached through a link, then ..
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "in").symlink_to(version / "x")
    sneaky = f"{tmp_path}/far/in/../sub"
    assert os.path.abspath(sneaky) == str(tmp_path / "far" / "sub")  # lexically elsewhere
    with pytest.raises(InputError, match=rf"lies inside {version.name}"):
        build_index(docs("b"), sneaky, NoEmbedder(), progress=False)
    (version / "x").rmdir()
    assert (
        sorted(p.name for p in version.iterdir()) == sorted(p.name for p in out.iterdir())
        and not (tmp_path / "far" / "sub").exists()
    )
    assert all(WORDS["a"] in c.text for c in load_index(out).chunks)
    build_index(docs("b"), out, NoEmbedder(), progress=False)  # the index itself still rebuilds
    assert all(WORDS["b"] in c.text for c in load_index(out).chunks)


def test_a_rebuild_deletes_only_what_kbqa_named(tmp_path: Path) -> None:
    """A break-it finding: a rebuild of ``idx`` deleted a user's ``.idx.v-backup``,
    ``.idx.old-notes`` and ``.idx.link-note`` (the names were matched by prefix), and a folder
    ``.idx.link-dir`` stopped it with "Is a directory"."""
    out = tmp_path / "idx"
    build_index(docs("a"), out, NoEmbedder(), progress=False)
    mine = {".idx.v-backup": "dir", ".idx.old-notes": "dir", ".idx.link-note": "file",
            ".idx.link-dir": "dir", ".idx.v-1-2-extra": "dir",
            ".idx.tmp-mydata-999998": "dir"}  # fmt: skip
    for name, kind in mine.items():
        if kind == "dir":
            (tmp_path / name).mkdir()
            (tmp_path / name / "keep.txt").write_text("mine", "utf-8")
        else:
            (tmp_path / name).write_text("mine", "utf-8")
    for kind in ("b", "a", "b"):
        build_index(docs(kind), out, NoEmbedder(), progress=False)
    assert all(WORDS["b"] in c.text for c in load_index(out).chunks)
    for name, kind in mine.items():
        kept = tmp_path / name / "keep.txt" if kind == "dir" else tmp_path / name
        assert kept.read_text("utf-8") == "mine", name
    versions = [p.name for p in tmp_path.iterdir() if p.name.startswith(".idx.v-")]
    assert len(versions) == 2 + 2, versions  # the current and the previous build, and mine


def test_a_relative_link_in_a_linked_folder_climbs_from_where_it_really_is(
    tmp_path: Path,
) -> None:
    """A break-it trial: ``pl/lnk -> ../o`` with ``pl`` a link to ``deep/sub`` was published at
    ``o`` (``..`` taken from ``pl``), and the user's link still pointed at nothing."""
    (tmp_path / "deep" / "sub").mkdir(parents=True)
    (tmp_path / "pl").symlink_to(tmp_path / "deep" / "sub")
    (tmp_path / "deep" / "sub" / "lnk").symlink_to("../o")
    build_index(docs("a"), tmp_path / "pl" / "lnk", NoEmbedder(), progress=False)
    assert (tmp_path / "deep" / "o").is_symlink() and not (tmp_path / "o").exists()
    assert len(load_index(tmp_path / "pl" / "lnk").chunks) > 0


def test_a_loop_of_links_is_an_error_that_names_it(tmp_path: Path) -> None:
    from kbqa.errors import InputError

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(InputError, match="is a loop of symbolic links"):
        build_index(docs("a"), tmp_path / "a", NoEmbedder(), progress=False)
    with pytest.raises(InputError, match="is a loop of symbolic links"):
        load_index(tmp_path / "a")


def test_a_deleted_index_stays_deleted(tmp_path: Path) -> None:
    from kbqa.errors import IndexLoadError

    out = tmp_path / "idx"
    for _ in range(2):
        build_index(docs("a"), out, NoEmbedder(), progress=False)
    out.unlink()  # `rm idx`: the versions are left behind, but the user removed the index
    with pytest.raises(IndexLoadError, match="index not found"):
        load_index(out)


def test_without_symbolic_links_the_plain_layout_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(*args: object, **kwargs: object) -> None:
        raise OSError(1, "Operation not permitted")  # exFAT, some network filesystems

    monkeypatch.setattr(os, "symlink", no_links)
    out = tmp_path / "idx"
    for kind in "ab":
        build_index(docs(kind), out, NoEmbedder(), progress=False)
        assert out.is_dir() and not out.is_symlink()
        assert WORDS[kind] in load_index(out).chunks[0].text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_a_skipped_unreadable_folder_file_does_not_fail_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.corpus.loaders import load_documents

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.txt").write_text("ঢাকা বাংলাদেশের রাজধানী।", encoding="utf-8")
    (kb / "b.txt").write_text("x", encoding="utf-8")
    real_open = Path.open

    def denied(self: Path, *args: object, **kwargs: object) -> object:
        if self.name == "b.txt":  # chmod 0 does not stop root
            raise PermissionError(13, "Permission denied")
        return real_open(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", denied)
    monkeypatch.setattr(Path, "read_bytes", lambda self: denied(self, "rb").read())
    docs_read = load_documents(kb, skip_bad_lines=True)
    report = build_index(docs_read, tmp_path / "idx", NoEmbedder(), source=kb, progress=False)
    assert report.documents == 1
