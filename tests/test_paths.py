"""Checks on folders kbqa writes to: what stands in the way is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbqa.paths import in_the_way, write_refusal


def test_in_the_way_names_a_file_or_a_broken_link_above_the_folder(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert in_the_way(tmp_path / "afile" / "a" / "b") == f"{tmp_path / 'afile'} is a file"
    assert in_the_way(tmp_path / "dangling") == f"{tmp_path / 'dangling'} is a broken link"
    assert in_the_way(tmp_path / "new" / "deep") is None  # creatable
    assert in_the_way(tmp_path) is None


def test_write_refusal_gives_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert write_refusal(tmp_path) is None

    def read_only(*args: object, **kwargs: object) -> None:
        raise PermissionError(30, "Read-only file system")

    monkeypatch.setattr("kbqa.paths.tempfile.TemporaryFile", read_only)
    assert write_refusal(tmp_path) == "Read-only file system"
