"""kbqa's cache directory, file checksums and what names a model file, which the model registry
and the adapters share."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kbqa.errors import ModelError


def cache_root() -> Path:
    """kbqa's cache: ``$KBQA_CACHE_DIR`` or ``~/.cache/kbqa``.

    Raises:
        ModelError: ``KBQA_CACHE_DIR`` is unset and the user has no home directory.
    """
    if os.environ.get("KBQA_CACHE_DIR"):
        return Path(os.environ["KBQA_CACHE_DIR"]).expanduser()
    try:
        return Path.home() / ".cache" / "kbqa"
    except RuntimeError:  # no $HOME and no passwd entry
        raise ModelError(
            "no home directory for kbqa's model cache; set KBQA_CACHE_DIR to a writable directory"
        ) from None


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def names_gguf_file(name: str) -> bool:
    """Does the model name ``name`` name a local GGUF file rather than a registered model? Its
    suffix is ``.gguf`` in any case (``.GGUF`` read as an unknown model name: a helper's
    finding)."""
    return Path(name).suffix.lower() == ".gguf"
