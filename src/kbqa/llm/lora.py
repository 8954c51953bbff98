"""LoRA adapters for the reader: find one, read its manifest, and refuse one for another base.

An adapter is a directory written by ``kbqa finetune reader`` (``adapter.gguf`` plus
``manifest.json``) or the ``adapter.gguf`` file alone. The GGUF carries the sha256 of the base
GGUF it was trained on (``kbqa.base_sha256``) and the prompt style it was trained with
(``kbqa.prompt_style``), so a bare file is checked as strictly as a directory. Adapters shipped
inside the package live in ``kbqa/llm/adapters/<name>/``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa.errors import ModelError

ADAPTERS_DIR = Path(__file__).parent / "adapters"
"""Adapters shipped in the package, one directory each."""
ADAPTER_FILE = "adapter.gguf"
MANIFEST_FILE = "manifest.json"
KV_BASE_SHA256 = "kbqa.base_sha256"
"""GGUF metadata key: sha256 of the base GGUF the adapter was trained on."""
KV_PROMPT_STYLE = "kbqa.prompt_style"
"""GGUF metadata key: the prompt style (``tuned``) the adapter was trained with."""


@dataclass(frozen=True, slots=True)
class Adapter:
    """A LoRA adapter ready for llama.cpp.

    Attributes:
        path: The adapter GGUF.
        base_sha256: sha256 of the base GGUF it was trained on.
        prompt_style: The prompt style it was trained with.
        manifest: ``manifest.json`` beside it ({} when there is none).
    """

    path: Path
    base_sha256: str
    prompt_style: str
    manifest: dict[str, Any]


def shipped_adapter(name: str) -> Path:
    """The directory of an adapter shipped in the package.

    Raises:
        ModelError: No such shipped adapter.
    """
    path = ADAPTERS_DIR / name
    if not (path / ADAPTER_FILE).is_file():
        raise ModelError(f"adapter {name!r} is not shipped in this kbqa package ({path})")
    return path


@functools.cache
def load_adapter(spec: str) -> Adapter:
    """Read an adapter directory or ``.gguf`` file (once per process).

    Args:
        spec: A directory holding ``adapter.gguf`` (and ``manifest.json``), or a ``.gguf``
            file.

    Raises:
        ModelError: The path does not exist, holds no adapter GGUF, is not a LoRA adapter GGUF,
            lacks the ``kbqa.base_sha256`` key, or has a ``manifest.json`` that is not JSON.
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / ADAPTER_FILE
    if not path.is_file():
        raise ModelError(f"reader adapter not found: {spec} (a directory with {ADAPTER_FILE})")
    try:
        import gguf

        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError) as exc:
        raise ModelError(f"{path} is not a GGUF file: {exc}") from None

    def text(key: str) -> str:
        field = reader.fields.get(key)
        return "" if field is None else str(field.contents())

    if text("general.type") != "adapter" or text("adapter.type") != "lora":
        raise ModelError(f"{path} is a GGUF but not a LoRA adapter (general.type=adapter)")
    base = text(KV_BASE_SHA256)
    if not base:
        raise ModelError(
            f"{path} does not say which base it was trained on ({KV_BASE_SHA256}); "
            "export it with kbqa finetune"
        )
    manifest_path = path.parent / MANIFEST_FILE
    manifest: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text("utf-8"))
        except (ValueError, OSError) as exc:
            raise ModelError(f"{manifest_path} is not a readable JSON manifest: {exc}") from None
        if not isinstance(manifest, dict):
            raise ModelError(f"{manifest_path} is not a JSON object")
    return Adapter(path, base, text(KV_PROMPT_STYLE) or "tuned", manifest)


def check_base(adapter: Adapter, base_name: str, base_sha256: str) -> None:
    """Refuse an adapter trained on another base GGUF.

    Raises:
        ModelError: The adapter's base sha256 differs from ``base_sha256`` (the message names
            both and the base the manifest names).
    """
    if adapter.base_sha256 != base_sha256:
        trained = adapter.manifest.get("base_model", "another model")
        raise ModelError(
            f"adapter {adapter.path} was trained on {trained} (sha256 "
            f"{adapter.base_sha256[:12]}...), not on {base_name} (sha256 {base_sha256[:12]}...)"
        )
