"""kbqa installs as a package (issue 36 item 7): a wheel built with ``python -m build`` goes into
a fresh virtual environment, and from a folder outside the repository it indexes the README's
Quick start knowledge base and answers its question as the repository's own code does, with the
reader adapter the wheel ships.

Needs ``../shared/data`` (or ``$KBQA_DATA_DIR``) and package downloads (PyPI, or pip's cache);
llama-cpp-python is the wheel ``scripts/setup.sh`` built for this CPU, from the folder
``scripts/wheel-cache.sh`` names (``$KBQA_WHEEL_CACHE``, default ``~/.cache/kbqa/wheels``, and
``no-amx/`` below it on a CPU with AMX), so nothing is compiled again and the venv gets the build
that runs here (a native build crashes on AMX CPUs: docs/troubleshooting.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import data_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "কোন জাদুঘরে সারগনিক বিজয় ফলক আছে?"
"""The README's Quick start question."""
SHIPPED = (
    "kbqa/llm/adapters/gemma3-270m-reader/adapter.gguf",
    "kbqa/llm/adapters/gemma3-270m-reranker/adapter.gguf",
    "kbqa/llm/adapters/gemma3-270m-reranker/manifest.json",
    "kbqa/serve/page.html",
)
"""Package data the installed kbqa must hold (the default reader's adapter, the shipped
reranker, the chat page)."""


def run(cmd: list[str], cwd: Path, timeout: float = 1800) -> str:
    """Run ``cmd`` with no kbqa source on its path; its stdout, or a failure showing both
    streams."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode:
        pytest.fail(f"{' '.join(map(str, cmd))} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done.stdout


def test_the_wheel_installs_and_answers_the_quick_start_question(tmp_path: Path) -> None:
    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    source = tmp_path / "source"  # a copy, so that building writes nothing into the repository
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist")], source)
    (wheel,) = (tmp_path / "dist").glob("kbqa-*.whl")

    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    wheels = run(["bash", str(ROOT / "scripts" / "wheel-cache.sh")], ROOT).split("\n")[0]
    (pin,) = re.findall(r'"llama-cpp-python==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    llama = list(Path(wheels).glob(f"llama_cpp_python-{pin}-*.whl"))
    assert llama, f"no llama-cpp-python {pin} wheel in {wheels}: run `bash scripts/setup.sh` first"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--find-links", wheels]
    run([*pip, "--no-deps", str(llama[0])], tmp_path)
    # never a build from source: on an AMX CPU the native build crashes
    run([*pip, "--only-binary", "llama-cpp-python", str(wheel)], tmp_path)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = run([str(venv / "bin" / "python"), "-c", "import kbqa; print(kbqa.__file__)"], outside)
    package = Path(where.strip()).parent
    assert package.is_relative_to(venv), f"kbqa imported from {package}, not the installed wheel"
    for name in SHIPPED:
        assert (package.parent / name).is_file(), f"the wheel does not ship {name}"

    kbqa = str(venv / "bin" / "kbqa")
    kb = data / "bn" / "bnwiki_kb.jsonl"
    run([kbqa, "index", str(kb), "--out", "index/bnwiki", "--skip-bad-lines"], outside)
    ask = ["ask", QUESTION, "--index", str(outside / "index" / "bnwiki"), "--json"]
    installed = json.loads(run([kbqa, *ask], outside))
    repository = json.loads(run([sys.executable, "-m", "kbqa.cli", *ask], ROOT))
    assert installed["answer"].strip()
    assert not installed["abstained"]
    for key in ("answer", "abstained", "answered_by"):
        assert installed[key] == repository[key], key
    assert [s["doc_id"] for s in installed["sources"]] == [
        s["doc_id"] for s in repository["sources"]
    ]
