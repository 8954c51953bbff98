"""Reader adapters: found in a directory or as a file, refused for another base or when malformed
(offline, no model loaded)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import tiny_gemma_base

from kbqa.errors import ModelError
from kbqa.finetune.export import write_lora_gguf
from kbqa.llm import lora
from kbqa.llm.models import MODELS, resolve_adapter

GEMMA_SHA = MODELS["gemma3-270m"].sha256


def _adapter(tmp_path: Path, base_sha: str | None = GEMMA_SHA, name: str = "a") -> Path:
    rng = np.random.default_rng(0)
    # shapes of Gemma 3 270M's attn_q (out 1024, in 640), in torch order: A (r, in), B (out, r)
    pairs = {"blk.0.attn_q.weight": (rng.normal(size=(4, 640)), rng.normal(size=(1024, 4)))}
    meta = {lora.KV_PROMPT_STYLE: "tuned"}
    if base_sha:
        meta[lora.KV_BASE_SHA256] = base_sha
    folder = tmp_path / name
    folder.mkdir()
    write_lora_gguf(pairs, 8, folder / lora.ADAPTER_FILE, arch="gemma3", metadata=meta)
    (folder / lora.MANIFEST_FILE).write_text('{"base_model": "gemma3-270m"}')
    return folder


def test_adapter_from_directory_or_file(tmp_path: Path) -> None:
    folder = _adapter(tmp_path)
    for spec in (folder, folder / lora.ADAPTER_FILE):
        found = lora.load_adapter(str(spec))
        assert found.base_sha256 == GEMMA_SHA
        assert found.prompt_style == "tuned"
        assert found.manifest == {"base_model": "gemma3-270m"}
    path, style = resolve_adapter("gemma3-270m", str(folder))  # type: ignore[misc]
    assert path == folder / lora.ADAPTER_FILE and style == "tuned"


def test_adapter_for_another_base_is_refused(tmp_path: Path) -> None:
    folder = _adapter(tmp_path, base_sha="f" * 64)
    with pytest.raises(ModelError, match=r"trained on gemma3-270m \(sha256 ffffffffffff"):
        resolve_adapter("gemma3-270m", str(folder))


def test_malformed_adapters_are_named(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="LoRA adapter not found") as missing:
        lora.load_adapter(str(tmp_path / "missing"))
    assert "training checkpoint" not in str(missing.value)
    checkpoint = tmp_path / "checkpoint"  # what `kbqa finetune reader` saves, not yet exported
    checkpoint.mkdir()
    (checkpoint / "adapter_model.safetensors").write_bytes(b"")
    with pytest.raises(ModelError, match="training checkpoint: `kbqa finetune export"):
        lora.load_adapter(str(checkpoint))
    no_base = _adapter(tmp_path, base_sha=None, name="nobase")
    with pytest.raises(ModelError, match="does not say which base"):
        lora.load_adapter(str(no_base))
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    with pytest.raises(ModelError, match="is not a GGUF file"):
        lora.load_adapter(str(junk))


def test_a_model_gguf_is_not_an_adapter(tmp_path: Path) -> None:
    import gguf

    path = tmp_path / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "gemma3")
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_tensor("token_embd.weight", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelError, match="not a LoRA adapter"):
        lora.load_adapter(str(path))


def test_plain_models_have_no_adapter() -> None:
    assert resolve_adapter("gemma3-270m") is None
    assert MODELS["gemma3-270m-reader"].adapter == "gemma3-270m-reader"


def test_serving_threshold_comes_from_the_manifest(tmp_path: Path) -> None:
    from kbqa.llm.models import serving_threshold

    folder = _adapter(tmp_path)
    assert serving_threshold(folder / lora.ADAPTER_FILE) == 0.0  # none chosen: plain greedy
    for value, name in ((0.35, "chosen"), ("high", "text"), (1.5, "range"), (True, "bool")):
        folder = _adapter(tmp_path, name=name)
        manifest = {"base_model": "gemma3-270m", "serving": {"abstention_threshold": value}}
        (folder / lora.MANIFEST_FILE).write_text(json.dumps(manifest))
        if value == 0.35:
            assert serving_threshold(folder / lora.ADAPTER_FILE) == 0.35
        else:
            with pytest.raises(ModelError, match=r"serving\.abstention_threshold"):
                serving_threshold(folder / lora.ADAPTER_FILE)


def test_adapter_tensors_must_fit_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "cache"))
    base = tiny_gemma_base(tmp_path / "base.gguf")
    good = _adapter(tmp_path) / lora.ADAPTER_FILE
    lora.check_adapter_tensors(good, base)  # fits
    assert (tmp_path / "cache" / "tensor-shapes").is_dir()  # the base's shapes are cached
    rng = np.random.default_rng(0)
    cases = {
        "blk.0.attn_q.weight": (rng.normal(size=(4, 999)), rng.normal(size=(1024, 4))),
        "blk.0.nonexistent.weight": (rng.normal(size=(4, 640)), rng.normal(size=(1024, 4))),
    }
    for i, (name, pair) in enumerate(cases.items()):
        bad = tmp_path / f"bad{i}.gguf"
        write_lora_gguf({name: pair}, 8, bad, arch="gemma3", metadata={})
        # llama.cpp crashes the process on such an adapter: it must be refused before
        with pytest.raises(ModelError, match=r"is \(640, 1024\)|adapts no tensor"):
            lora.check_adapter_tensors(bad, base)


def test_damaged_adapter_files_are_refused_before_llama_cpp(tmp_path: Path) -> None:
    import gguf

    folder = _adapter(tmp_path)
    good = (folder / lora.ADAPTER_FILE).read_bytes()
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(good[:200])  # a header cut short: gguf-py raised IndexError
    with pytest.raises(ModelError, match="not a readable GGUF file"):
        lora.load_adapter(str(truncated))
    # a tensor whose data offset points into another's (llama.cpp segfaulted on these)
    two = _two_tensor_adapter(tmp_path)
    reader = gguf.GGUFReader(str(two), "r+")
    reader.tensors[1].field.parts[-1][0] = 0
    del reader
    with pytest.raises(ModelError, match="overlap: the file is corrupt"):
        lora.load_adapter(str(two))
    # bytes changed after export: the manifest's sha256 no longer matches
    changed = _adapter(tmp_path, name="changed")
    (changed / lora.MANIFEST_FILE).write_text(json.dumps({"adapter_sha256": "0" * 64}))
    with pytest.raises(ModelError, match="does not match its manifest"):
        lora.load_adapter(str(changed))
    (changed / lora.MANIFEST_FILE).unlink()
    (changed / lora.MANIFEST_FILE).mkdir()
    with pytest.raises(ModelError, match="is not a readable file"):
        lora.load_adapter(str(changed))


def _two_tensor_adapter(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    pairs = {"blk.0.attn_q.weight": (rng.normal(size=(4, 640)), rng.normal(size=(1024, 4)))}
    path = tmp_path / "two.gguf"
    meta = {lora.KV_BASE_SHA256: GEMMA_SHA}
    write_lora_gguf(pairs, 8, path, arch="gemma3", metadata=meta)
    return path


def test_rank_zero_adapters_do_not_fit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "cache"))
    base = tiny_gemma_base(tmp_path / "base.gguf")
    bad = tmp_path / "rank0.gguf"
    pair = (np.zeros((0, 640)), np.zeros((1024, 0)))
    write_lora_gguf({"blk.0.attn_q.weight": pair}, 8, bad, arch="gemma3", metadata={})
    with pytest.raises(ModelError, match=r"r >= 1"):
        lora.check_adapter_tensors(bad, base)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("base_sha256", "0" * 64, "base_sha256 is '0000"),
        ("base_model", "qwen2.5-coder-1.5b", "base_model is 'qwen2.5-coder-1.5b'"),
        ("prompt_style", "chatml", "prompt_style is 'chatml', the adapter's is 'tuned'"),
        ("lora", {"r": 999, "alpha": 32}, "lora.r is 999, the adapter's is 16"),
    ],
)
def test_a_manifest_that_does_not_describe_its_adapter_is_refused(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    """Issue 34 item 8: a copy of the shipped adapter whose manifest named another base, prompt
    style or rank was served silently."""
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(lora.shipped_adapter("gemma3-270m-reader"), copy)
    manifest = json.loads((copy / "manifest.json").read_text("utf-8"))
    lora.load_adapter(str(copy))  # as shipped: accepted
    lora.read_adapter_file.cache_clear()
    (copy / "manifest.json").write_text(json.dumps(manifest | {field: value}), "utf-8")
    with pytest.raises(ModelError, match=re.escape(message)):
        resolve_adapter("gemma3-270m", str(copy))
    lora.read_adapter_file.cache_clear()


def test_an_adapter_folder_without_a_manifest_says_how_it_is_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import shutil

    copy = tmp_path / "bare"
    copy.mkdir()
    shutil.copy(lora.shipped_adapter("gemma3-270m-reader") / "adapter.gguf", copy)
    with (copy / "adapter.gguf").open("r+b") as fh:  # no longer the shipped reader's bytes
        fh.seek(-1, 2)
        last = fh.read(1)[0]
        fh.seek(-1, 2)
        fh.write(bytes([last ^ 1]))
    with caplog.at_level("WARNING", logger="kbqa"):
        found = lora.load_adapter(str(copy))
        lora.load_adapter(str(copy / "adapter.gguf"))  # the same adapter, named another way
    lora.read_adapter_file.cache_clear()
    assert found.manifest == {} and found.copy_of == ""
    said = [r for r in caplog.records if "has no manifest.json" in r.getMessage()]
    assert len(said) == 1 and "threshold 0" in said[0].getMessage(), said  # once, not per load


@pytest.mark.parametrize("shipped", ["gemma3-270m-reader", "gemma3-270m-reranker"])
@pytest.mark.parametrize("changed", [False, True])
def test_a_shipped_adapters_weights_keep_its_role_without_its_manifest(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, shipped: str, changed: bool
) -> None:
    """Break-it findings: the reranker's ``adapter.gguf`` copied alone was served as a reader
    (no manifest, so no role), also with a byte appended, or beside a manifest saying
    "reader"; and ``--reranker`` refused the copy the refusal pointed to. An adapter holding a
    shipped adapter's weights keeps that adapter's role, and without a manifest its serving
    settings (:func:`kbqa.llm.lora.shipped_weights`)."""
    import shutil

    from kbqa.errors import InputError, ModelError
    from kbqa.finetune.import_adapter import read_lora_gguf
    from kbqa.llm.models import resolve_adapter, serving_threshold
    from kbqa.llm.rerank import reranker_dir_problem

    copy = tmp_path / "alone" / "adapter.gguf"
    copy.parent.mkdir()
    shutil.copy(lora.shipped_adapter(shipped) / "adapter.gguf", copy)
    if changed:  # other bytes than the weights'
        with copy.open("ab") as fh:
            fh.write(b"\0")
    try:
        with caplog.at_level("WARNING", logger="kbqa"):
            found = lora.load_adapter(str(copy))
        shipped_manifest = json.loads(
            (lora.shipped_adapter(shipped) / "manifest.json").read_text("utf-8")
        )
        assert found.copy_of == shipped
        assert (
            found.manifest["role" if "reranker" in shipped else "serving"]
            == (shipped_manifest["role" if "reranker" in shipped else "serving"])
        )
        assert "adapter_sha256" not in found.manifest  # it describes the shipped bytes
        assert not [r for r in caplog.records if "has no manifest.json" in r.getMessage()]
        if shipped.endswith("reader"):
            assert (
                serving_threshold(copy)
                == 0.4
                == serving_threshold(lora.shipped_adapter(shipped) / "adapter.gguf")
            )
            assert reranker_dir_problem(copy.parent) == "it has no manifest.json"
            return
        said = r"\(the shipped gemma3-270m-reranker's weights\) is a reranker's adapter"
        for role in ("reader", "verifier"):
            with pytest.raises(ModelError, match=said + ".*serve it with --reranker"):
                resolve_adapter("gemma3-270m", str(copy), role)
        with pytest.raises(InputError, match=said + ".*starts from a reader's adapter"):
            read_lora_gguf(copy, "reader")
        assert reranker_dir_problem(copy.parent) is None  # what the refusal says to do works
        (copy.parent / "manifest.json").write_text('{"role": "reader"}', "utf-8")
        lora.read_adapter_file.cache_clear()
        with pytest.raises(ModelError, match=r"holds the weights of the shipped gemma3-270m-re"):
            resolve_adapter("gemma3-270m", str(copy))
    finally:
        lora.read_adapter_file.cache_clear()


def test_only_matrices_of_the_blocks_are_adapted(tmp_path: Path) -> None:
    """Break-it findings: an adapter of ``token_embd.weight`` crashed llama.cpp (segmentation
    fault), and one of a 1-D norm weight was a traceback from the error message itself."""
    import gguf

    base = tmp_path / "base.gguf"
    writer = gguf.GGUFWriter(str(base), "gemma3")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((8, 640), dtype=np.float32))
    writer.add_tensor("blk.0.attn_norm.weight", np.zeros(640, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    for target, pair in (
        ("token_embd.weight", (np.zeros((4, 640)), np.zeros((8, 4)))),
        ("blk.0.attn_norm.weight", (np.zeros((4, 640)), np.zeros((1, 4)))),
    ):
        bad = tmp_path / f"{target}.gguf"
        write_lora_gguf({target: pair}, 8, bad, arch="gemma3", metadata={})
        with pytest.raises(ModelError, match=rf"adapts {re.escape(target)} .*not a matrix of a"):
            lora.check_adapter_tensors(bad, base)


def test_an_exported_adapter_reads_back_for_a_new_run(tmp_path: Path) -> None:
    """``--init-adapter ADAPTER.gguf`` (:func:`kbqa.finetune.export.read_lora_gguf`): the pairs
    as written, widened to float32; helpers' findings refused with a line that names them."""
    from kbqa.errors import InputError
    from kbqa.finetune.import_adapter import exported_adapter_file, read_lora_gguf

    folder = _adapter(tmp_path)
    assert exported_adapter_file(folder) == folder / lora.ADAPTER_FILE
    arch, alpha, pairs = read_lora_gguf(folder / lora.ADAPTER_FILE)
    a, b = pairs["blk.0.attn_q.weight"]
    rng = np.random.default_rng(0)
    assert arch == "gemma3" and alpha == 8 and a.dtype == np.float32
    np.testing.assert_allclose(a, rng.normal(size=(4, 640)), atol=2e-3)  # float16 in the file
    assert b.shape == (1024, 4)
    (folder / "adapter_model.safetensors").write_bytes(b"")  # a checkpoint's weights beside it
    assert exported_adapter_file(folder) is None
    with pytest.raises(InputError, match="LoRA adapter not found"):
        read_lora_gguf(tmp_path / "gone.gguf")
    reranker = _adapter(tmp_path, name="r")
    (reranker / lora.MANIFEST_FILE).write_text('{"base_model": "gemma3-270m", "role": "reranker"}')
    with pytest.raises(InputError, match="is a reranker's adapter"):
        read_lora_gguf(reranker / lora.ADAPTER_FILE)
    assert read_lora_gguf(reranker / lora.ADAPTER_FILE, "reranker")[1] == 8  # its own run's
    assert read_lora_gguf(folder / lora.ADAPTER_FILE, "verifier")[1] == 8  # a reader's: verifier
    with pytest.raises(InputError, match="a reranker's run starts from a reranker's adapter"):
        read_lora_gguf(folder / lora.ADAPTER_FILE, "reranker")
    bad = tmp_path / "nan"
    bad.mkdir()
    nan = np.full((4, 640), np.nan)
    write_lora_gguf({"blk.0.attn_q.weight": (nan, np.zeros((1024, 4)))}, 8, bad / "a.gguf",
                    arch="gemma3", metadata={lora.KV_BASE_SHA256: GEMMA_SHA})  # fmt: skip
    with pytest.raises(InputError, match="NaN or infinite"):
        read_lora_gguf(bad / "a.gguf")
    write_lora_gguf({}, 8, bad / "none.gguf", arch="gemma3",
                    metadata={lora.KV_BASE_SHA256: GEMMA_SHA})  # fmt: skip
    with pytest.raises(InputError, match="holds no LoRA tensor"):
        read_lora_gguf(bad / "none.gguf")
    upper = {"blk.0.attn_q.weight": (np.zeros((4, 640)), np.zeros((1024, 4)))}
    write_lora_gguf(upper, 8, bad / "upper.gguf", arch="gemma3",
                    metadata={lora.KV_BASE_SHA256: GEMMA_SHA})  # fmt: skip
    import gguf  # llama.cpp reads .lora_a/.lora_b only: a .lora_A file is refused

    reader = gguf.GGUFReader(str(bad / "upper.gguf"))
    renamed = gguf.GGUFWriter(str(bad / "upper2.gguf"), "gemma3")
    renamed.add_type(gguf.GGUFType.ADAPTER)
    renamed.add_string(gguf.Keys.Adapter.TYPE, "lora")
    renamed.add_float32(gguf.Keys.Adapter.LORA_ALPHA, 8.0)
    renamed.add_string(lora.KV_BASE_SHA256, GEMMA_SHA)
    for t in reader.tensors:
        renamed.add_tensor(t.name.replace(".lora_a", ".lora_A"), np.array(t.data))
    renamed.write_header_to_file()
    renamed.write_kv_data_to_file()
    renamed.write_tensors_to_file()
    renamed.close()
    with pytest.raises(InputError, match=r"lora_A is not a LoRA tensor"):
        read_lora_gguf(bad / "upper2.gguf")
    odd = {  # a break-it finding: caught only when the base model had loaded
        "rank": {"blk.0.attn_q.weight": (np.zeros((4, 640)), np.zeros((1024, 8)))},
        "ranks": {"blk.0.attn_q.weight": (np.zeros((4, 640)), np.zeros((1024, 4))),
                  "blk.0.attn_k.weight": (np.zeros((8, 640)), np.zeros((256, 8)))},
        "name": {"blk.0.attn_qq.weight": (np.zeros((4, 640)), np.zeros((1024, 4)))},
    }  # fmt: skip
    for kind, tensors in odd.items():
        write_lora_gguf(tensors, 8, bad / f"{kind}.gguf", arch="gemma3",
                        metadata={lora.KV_BASE_SHA256: GEMMA_SHA})  # fmt: skip
    with pytest.raises(InputError, match=r"lora_a is \(4, 640\) and lora_b \(1024, 8\)"):
        read_lora_gguf(bad / "rank.gguf")
    with pytest.raises(InputError, match=r"mixes LoRA ranks \[4, 8\]"):
        read_lora_gguf(bad / "ranks.gguf")
    with pytest.raises(InputError, match=r"blk.0.attn_qq.weight names no tensor of a gemma3"):
        read_lora_gguf(bad / "name.gguf")


def test_an_init_adapter_that_does_not_fit_the_base_is_refused_before_it_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break-it findings: ``--init-adapter`` with another base's sha256 or architecture, a
    tensor of the wrong shape, or other modules than the run's was found only once the base had
    loaded (:func:`kbqa.finetune.import_adapter.check_fits_base`)."""
    from kbqa.errors import InputError
    from kbqa.finetune.import_adapter import check_fits_base
    from kbqa.llm.cache import file_sha256

    monkeypatch.setenv("KBQA_CACHE_DIR", str(tmp_path / "cache"))
    base = tiny_gemma_base(tmp_path / "base.gguf")
    sha = file_sha256(base)
    pair = (np.zeros((4, 640)), np.zeros((1024, 4)))

    def adapter(name: str, pairs: dict, arch: str = "gemma3", base_sha: str = sha) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        write_lora_gguf(pairs, 8, folder / lora.ADAPTER_FILE, arch=arch,
                        metadata={lora.KV_BASE_SHA256: base_sha})  # fmt: skip
        return folder

    good = adapter("good", {"blk.0.attn_q.weight": pair})
    check_fits_base(good, base, sha, ["q_proj"])
    check_fits_base(tmp_path / "not-exported", base, sha, ["q_proj"])  # a checkpoint: not here
    with pytest.raises(InputError, match=r"it holds 1 more, first blk\.0\.attn_q\.weight"):
        check_fits_base(good, base, sha, ["q_proj"], first_layer=1)
    import gguf  # --lora-first-layer 1 of two blocks: block 1 only (a re-check's finding)

    two = tmp_path / "two.gguf"
    writer = gguf.GGUFWriter(str(two), "gemma3")
    writer.add_block_count(2)
    for block in (0, 1):
        writer.add_tensor(f"blk.{block}.attn_q.weight", np.zeros((1024, 640), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    upper = adapter("upper", {"blk.1.attn_q.weight": pair}, base_sha=file_sha256(two))
    check_fits_base(upper, two, file_sha256(two), ["q_proj"], first_layer=1)
    with pytest.raises(InputError, match=r"it lacks 1, first blk\.0\.attn_q\.weight"):
        check_fits_base(upper, two, file_sha256(two), ["q_proj"])
    for folder, targets, says in (
        (adapter("sha", {"blk.0.attn_q.weight": pair}, base_sha="e" * 64), ["q_proj"],
         r"trained on a base with sha256 eeeeeeeeeeee\.\.\., not on base\.gguf"),
        (adapter("arch", {"blk.0.attn_q.weight": pair}, arch="llama"), ["q_proj"],
         "is an adapter of a llama model, not of gemma3"),
        (adapter("shape", {"blk.0.attn_q.weight": (np.zeros((4, 10)), pair[1])}), ["q_proj"],
         r"is \(640, 1024\) in base\.gguf"),
        (adapter("layer", {"blk.0.attn_q.weight": pair, "blk.40.attn_q.weight": pair}),
         ["q_proj"], r"blk\.40\.attn_q\.weight\.lora_a adapts no tensor"),
        (good, ["q_proj", "k_proj"],
         r"lacks 1, first blk\.0\.attn_k\.weight\): the run adapts k_proj, q_proj in blocks 0-0"),
    ):  # fmt: skip
        with pytest.raises(InputError, match=says):
            check_fits_base(folder, base, sha, targets)


def test_the_shipped_adapters_are_the_named_ones() -> None:
    """Only the named adapters' weights carry a role (a re-check's finding: a folder a user put
    beside them, ``a-mine``, sorted first and lent a reranker's weights its own "reader")."""
    on_disk = {p.name for p in lora.ADAPTERS_DIR.iterdir() if (p / lora.ADAPTER_FILE).is_file()}
    assert on_disk == set(lora.SHIPPED_ADAPTERS) == set(lora._shipped_adapters())
