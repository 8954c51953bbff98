"""The Python examples of the README and of docs/usage.md run verbatim, with the real default
reader, on a small index built where they look for one (``index/bnwiki``). The evaluation example
is left out (it reads 50 questions of ``../shared/data``; ``tests/test_eval_runner.py`` covers
it)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from conftest import DOCS

from kbqa.corpus.document import Document
from kbqa.embedders import HashEmbedder
from kbqa.index import build_index

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
USAGE = ROOT / "docs" / "usage.md"


def python_examples() -> list[str]:
    """The ```python blocks of the "From Python" sections of the README and docs/usage.md."""
    blocks: list[str] = []
    for doc in (README, USAGE):
        section = doc.read_text("utf-8").split("## From Python", 1)[1].split("\n## ", 1)[0]
        blocks += re.findall(r"```python\n(.*?)```", section, flags=re.S)
    return [b for b in blocks if "evaluate_questions" not in b]


def test_the_readme_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = python_examples()
    assert len(blocks) >= 4  # the README's KBQA; usage.md's KBQA, graph, LangChain retriever
    louvre = Document("louvre", "ল্যুভর", "সারগনিক বিজয় ফলক এখন প্যারিসের ল্যুভর জাদুঘরে আছে।")
    build_index([*DOCS, louvre], tmp_path / "index" / "bnwiki", HashEmbedder(), progress=False)
    monkeypatch.chdir(tmp_path)
    for block in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, str(README), "exec"), {})  # our own README
        assert printed.getvalue().strip(), block
    assert "answer:" in python_examples()[1] and "ল্যুভর" in printed.getvalue()
