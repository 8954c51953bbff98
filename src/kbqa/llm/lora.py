"""LoRA adapters for the reader: find one, read its manifest, and refuse one for another base.

An adapter is a directory written by ``kbqa finetune reader`` (``adapter.gguf`` plus
``manifest.json``) or the ``adapter.gguf`` file alone. The GGUF carries the sha256 of the base
GGUF it was trained on (``kbqa.base_sha256``) and the prompt style it was trained with
(``kbqa.prompt_style``), so a bare file is checked as strictly as a directory. Adapters shipped
inside the package live in ``kbqa/llm/adapters/<name>/``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbqa.errors import ModelError
from kbqa.llm.cache import cache_root, file_sha256

log = logging.getLogger("kbqa.llm")

ADAPTERS_DIR = Path(__file__).parent / "adapters"
"""Adapters shipped in the package, one directory each."""
SHIPPED_RERANKERS = ("gemma3-270m-reranker",)
"""Rerankers shipped in :data:`ADAPTERS_DIR`: ``--reranker NAME`` serves one as it serves a
directory from ``kbqa finetune reranker`` (:func:`kbqa.llm.rerank.reranker_dir`). The bare name
means the shipped one even beside a folder of that name in the working directory (``./NAME``
reaches the folder)."""
SHIPPED_ADAPTERS = ("gemma3-270m-reader", *SHIPPED_RERANKERS)
"""Every adapter shipped in :data:`ADAPTERS_DIR` (another folder there is not one of them)."""
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
        manifest: ``manifest.json`` beside it ({} when there is none), or the shipped
            adapter's when the file holds its weights without a manifest.
        copy_of: The shipped adapter whose weights this file holds, when no manifest is beside
            it ("" otherwise: :func:`shipped_weights`).
    """

    path: Path
    base_sha256: str
    prompt_style: str
    manifest: dict[str, Any]
    copy_of: str = ""

    @property
    def where(self) -> str:
        """The adapter's folder, saying which shipped adapter it copies when it does."""
        copy = f" (the shipped {self.copy_of}'s weights)" if self.copy_of else ""
        return f"{self.path.parent}{copy}"


def shipped_adapter(name: str) -> Path:
    """The directory of an adapter shipped in the package.

    Raises:
        ModelError: No such shipped adapter.
    """
    path = ADAPTERS_DIR / name
    if not (path / ADAPTER_FILE).is_file():
        raise ModelError(f"adapter {name!r} is not shipped in this kbqa package ({path})")
    return path


def _what_instead(folder: Path, spec: str) -> str:
    """What an adapter path should have been, said for a training checkpoint too."""
    if (folder / "adapter_model.safetensors").is_file():
        return f"it is a training checkpoint: `kbqa finetune export {spec} --out DIR` first"
    return f"a directory with {ADAPTER_FILE}"


def load_adapter(spec: str) -> Adapter:
    """Read an adapter directory or ``.gguf`` file, once per process whatever its spelling (the
    folder or its ``adapter.gguf``, relative, absolute or through a link:
    :func:`read_adapter_file`).

    Args:
        spec: A directory holding ``adapter.gguf`` (and ``manifest.json``), or a ``.gguf``
            file.

    Raises:
        ModelError: The path does not exist, holds no adapter GGUF, is not a readable LoRA
            adapter GGUF (tensor data misaligned, overlapping, outside the file or not a float
            type), lacks the ``kbqa.base_sha256`` key, has a ``manifest.json`` that is not a
            JSON object, or does not match the manifest's ``adapter_sha256``.
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        path = path / ADAPTER_FILE
    if not path.is_file():
        if spec in SHIPPED_RERANKERS:  # a name, not a path: the shipped reranker
            raise ModelError(
                f"{spec} is the reranker shipped with kbqa, not a reader's adapter: serve it "
                f"with --reranker {spec}"
            )
        raise ModelError(f"LoRA adapter not found: {spec} ({_what_instead(path.parent, spec)})")
    return read_adapter_file(path.resolve())


@functools.cache
def read_adapter_file(path: Path) -> Adapter:
    """Read and check the adapter GGUF at ``path`` (an absolute file path; cached, so its
    manifest's warnings are said once). Raises as :func:`load_adapter`."""
    with path.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ModelError(f"{path} is not a GGUF file (it does not start with GGUF)")
    try:
        import gguf

        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # gguf-py raises IndexError, KeyError, struct.error...
        raise ModelError(
            f"{path} is not a readable GGUF file ({type(exc).__name__}: {exc})"
        ) from None

    def text(key: str) -> str:
        field = reader.fields.get(key)
        try:
            return "" if field is None else str(field.contents())
        except Exception:  # a corrupt field reads as missing
            return ""

    kind = (text("general.type"), text("adapter.type"))
    if kind != ("adapter", "lora"):
        raise ModelError(
            f"{path} is a GGUF but not a LoRA adapter (general.type={kind[0] or 'missing'!r}, "
            f"adapter.type={kind[1] or 'missing'!r}; expected 'adapter' and 'lora')"
        )
    _check_layout(reader, path)
    base = text(KV_BASE_SHA256)
    if not base:
        raise ModelError(
            f"{path} does not say which base it was trained on ({KV_BASE_SHA256}); "
            "export it with kbqa finetune"
        )
    manifest_path = path.parent / MANIFEST_FILE
    manifest: dict[str, Any] = {}
    copy_of, shipped = shipped_weights(reader, path)
    if manifest_path.is_file():
        try:
            manifest = json.loads(manifest_path.read_text("utf-8"))
        except (ValueError, OSError) as exc:
            raise ModelError(f"{manifest_path} is not a readable JSON manifest: {exc}") from None
        if not isinstance(manifest, dict):
            raise ModelError(f"{manifest_path} is not a JSON object")
        expected = manifest.get("adapter_sha256")

        if expected and file_sha256(path) != expected:
            raise ModelError(
                f"{path} does not match its manifest (adapter_sha256 {str(expected)[:12]}...): "
                "the file is corrupt or was replaced; export the adapter again"
            )
        said, really = manifest.get("role", "reader"), shipped.get("role", "reader")
        if copy_of and (said == "reranker") != (really == "reranker"):  # a reader's may verify
            raise ModelError(
                f"{path} holds the weights of the shipped {copy_of}, a {really}'s adapter, but "
                f'{manifest_path} says it is a {said}\'s ("role": {json.dumps(said)}): give '
                f"it {copy_of}'s own manifest"
            )
        copy_of = ""  # described by its own manifest
    elif manifest_path.exists():
        raise ModelError(f"{manifest_path} is not a readable file")
    elif copy_of:  # the shipped manifest, less what describes the shipped file's bytes
        manifest = {
            k: v for k, v in shipped.items() if k not in ("adapter_sha256", "adapter_bytes")
        }
    elif path.name == ADAPTER_FILE:
        log.warning(
            "%s has no %s: its serving settings (the abstention threshold) are unknown, so "
            "it is served with threshold 0 (greedy) unless --abstention-threshold is given",
            path.parent,
            MANIFEST_FILE,
        )
    style = text(KV_PROMPT_STYLE) or "tuned"
    rank = min((int(min(t.shape)) for t in reader.tensors if t.name.endswith(".lora_a")), default=0)
    check_manifest(manifest, manifest_path, base_sha256=base, prompt_style=style, rank=rank)
    return Adapter(path, base, style, manifest, copy_of)


def shipped_weights(reader: Any, path: Path) -> tuple[str, dict[str, Any]]:
    """``(name, manifest)`` of the shipped adapter whose LoRA weights the GGUF ``path`` holds
    (the same tensor names, types, shapes and bytes; the file's other bytes may differ), so an
    adapter's role follows its weights: a copy made without its manifest keeps the shipped
    role and serving settings, and the reranker's weights are not served as a reader's (a
    break-it finding). ``("", {})`` when the weights are no shipped adapter's, or ``path`` is the
    shipped file itself.

    Args:
        reader: ``gguf.GGUFReader`` of ``path``.
        path: The adapter GGUF (absolute).
    """
    if path in {(ADAPTERS_DIR / name / ADAPTER_FILE).resolve() for name in SHIPPED_ADAPTERS}:
        return "", {}  # a shipped file itself
    layout = _tensor_layout(reader)
    for name, (shipped_layout, digest, manifest) in _shipped_adapters().items():
        if layout != shipped_layout:
            continue
        if _tensor_digest(reader) == digest:
            return name, manifest
    return "", {}


def _tensor_layout(reader: Any) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
    return tuple(
        sorted(
            (t.name, getattr(t.tensor_type, "name", str(t.tensor_type)), tuple(map(int, t.shape)))
            for t in reader.tensors
        )
    )


def _tensor_digest(reader: Any) -> str:
    digest = hashlib.sha256()
    for t in sorted(reader.tensors, key=lambda t: t.name):
        digest.update(t.name.encode())
        digest.update(memoryview(t.data).cast("B"))
    return digest.hexdigest()


@functools.cache
def _shipped_adapters() -> dict[str, tuple[Any, str, dict[str, Any]]]:
    """Name -> (tensor layout, weights digest, manifest) of each adapter shipped in the package
    (read once a process)."""
    import gguf

    found = {}
    for folder in (ADAPTERS_DIR / name for name in SHIPPED_ADAPTERS):
        try:
            manifest = json.loads((folder / MANIFEST_FILE).read_text("utf-8"))
            reader = gguf.GGUFReader(str(folder / ADAPTER_FILE))
        except (OSError, ValueError):  # a damaged install: its own load says so
            continue
        if isinstance(manifest, dict):
            found[folder.name] = (_tensor_layout(reader), _tensor_digest(reader), manifest)
    return found


def check_manifest(
    manifest: dict[str, Any], where: Path, *, base_sha256: str, prompt_style: str, rank: int
) -> None:
    """The manifest must describe the adapter it sits beside: its base's sha256, its prompt
    style and its LoRA rank (its ``base_model`` name is checked where models are known,
    :func:`kbqa.llm.models.resolve_adapter`). A manifest copied from another adapter would
    otherwise decide how this one is served.

    Raises:
        ModelError: The first field that disagrees with the adapter GGUF, named.
    """
    if "base_sha256" in manifest and manifest["base_sha256"] != base_sha256:
        refuse_manifest(where, "base_sha256", manifest["base_sha256"], base_sha256)
    if "prompt_style" in manifest and manifest["prompt_style"] != prompt_style:
        refuse_manifest(where, "prompt_style", manifest["prompt_style"], prompt_style)
    lora = manifest.get("lora")
    if isinstance(lora, dict) and "r" in lora and rank and lora["r"] != rank:
        refuse_manifest(where, "lora.r", lora["r"], rank)


def refuse_manifest(where: Path, field: str, says: Any, really: Any) -> None:
    """Stop on a manifest field that disagrees with its adapter.

    Raises:
        ModelError: Always, naming the manifest, the field and both values.
    """
    raise ModelError(
        f"{where} does not describe the adapter beside it: {field} is {says!r}, the adapter's "
        f"is {really!r}; export the adapter again or restore its own manifest"
    )


LORA_DTYPES = ("F32", "F16", "BF16")
"""Tensor types an adapter may hold (``kbqa finetune`` writes F16)."""


def _check_layout(reader: Any, path: Path) -> None:
    """Every tensor's data must lie inside the file, aligned, without overlapping another, in a
    float type with as many bytes as its shape needs: llama.cpp trusts the header and crashes
    (or reads garbage) otherwise.

    Raises:
        ModelError: The first tensor that breaks a rule, named.
    """
    import numpy as np

    size = path.stat().st_size
    alignment = int(getattr(reader, "alignment", 32) or 32)
    element = {"F32": 4, "F16": 2, "BF16": 2}
    spans = []
    for t in reader.tensors:
        dtype = getattr(t.tensor_type, "name", str(t.tensor_type))
        if dtype not in LORA_DTYPES:
            raise ModelError(f"{path}: tensor {t.name} is {dtype}, not one of {LORA_DTYPES}")
        start, n = int(t.data_offset), int(t.n_bytes)
        if start % alignment or start + n > size or n != element[dtype] * int(np.prod(t.shape)):
            raise ModelError(
                f"{path}: tensor {t.name}'s data ({n} bytes at offset {start}) is misaligned, "
                f"outside the file ({size} bytes) or not the size of its shape: the file is corrupt"
            )
        spans.append((start, start + n, t.name))
    spans.sort()
    for (_, end, name), (start, _, other) in itertools.pairwise(spans):
        if start < end:
            raise ModelError(f"{path}: tensors {name} and {other} overlap: the file is corrupt")


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


def check_adapter_tensors(adapter: Path, base: Path) -> None:
    """Refuse an adapter whose tensors do not fit the base GGUF: llama.cpp does not check and
    crashes the process on such an adapter.

    Each tensor must be ``<base tensor>.lora_a`` of shape (in, r) or ``<base tensor>.lora_b`` of
    shape (r, out) (GGUF dimension order) for a base matrix of shape (in, out) in a transformer
    block (``blk.N.``: an adapter of ``token_embd`` crashed llama.cpp), in pairs.

    Raises:
        ModelError: A tensor that names no base tensor or a tensor outside the blocks or not a
            matrix, has a shape that does not fit it, or lacks its partner (the message names
            the tensor and both shapes).
    """
    try:
        base_shapes, tensors = base_tensor_shapes(base), _shapes(adapter)
    except (ValueError, OSError) as exc:
        raise ModelError(f"cannot read the tensors of {adapter} or {base}: {exc}") from None
    if not tensors:
        raise ModelError(f"{adapter} holds no LoRA tensor")
    for name, shape in tensors.items():
        target, _, part = name.rpartition(".")
        partner = f"{target}.{'lora_b' if part == 'lora_a' else 'lora_a'}"
        if part not in ("lora_a", "lora_b") or target not in base_shapes:
            raise ModelError(f"{adapter}: tensor {name} adapts no tensor of {base.name}")
        if partner not in tensors:
            raise ModelError(f"{adapter}: {name} has no {partner.rpartition('.')[2]} partner")
        a, b = (shape, tensors[partner]) if part == "lora_a" else (tensors[partner], shape)
        w = base_shapes[target]
        if not target.startswith("blk.") or len(w) != 2:  # llama.cpp crashed on token_embd
            raise ModelError(
                f"{adapter}: {name} adapts {target} {w}, not a matrix of a transformer block "
                "(blk.N....weight), the only tensors kbqa's adapters adapt"
            )
        fits = (
            len(a) == len(b) == len(w) == 2
            and a[0] == w[0]
            and b[1] == w[1]
            and a[1] == b[0] >= 1  # rank 0 crashes llama.cpp
        )
        if not fits:
            raise ModelError(
                f"{adapter}: {target} is {w} in {base.name}, but its lora_a is {a} and lora_b "
                f"{b} (expected ({w[0]}, r) and (r, {w[1]}), r >= 1)"
            )


def _shapes(path: Path) -> dict[str, tuple[int, ...]]:
    import gguf

    return {t.name: tuple(int(x) for x in t.shape) for t in gguf.GGUFReader(str(path)).tensors}


def base_tensor_shapes(base: Path) -> dict[str, tuple[int, ...]]:
    """Tensor name -> shape (GGUF order) of a base GGUF. Reading a base's header takes seconds
    (its tokenizer holds 262k strings), so the shapes are cached in
    ``$KBQA_CACHE_DIR/tensor-shapes/`` keyed by the file's path, size and modification time.

    Raises:
        ValueError, OSError: The file is not a readable GGUF.
    """
    stat = base.stat()
    key = hashlib.sha1(f"{base.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()

    try:
        cached = cache_root() / "tensor-shapes" / f"{key}.json"
    except ModelError:  # no cache: read the header every time
        return _shapes(base)
    with contextlib.suppress(OSError, ValueError):
        return {k: tuple(v) for k, v in json.loads(cached.read_text("utf-8")).items()}
    shapes = _shapes(base)
    with contextlib.suppress(OSError):  # an unwritable cache only costs time
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(shapes), "utf-8")
        tmp.replace(cached)
    return shapes
