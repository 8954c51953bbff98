"""The LLM reranker in llama.cpp, on a tiny randomly initialised Gemma 3 (built by the test):
a pair scores the same alone, after other pairs and as one whole prompt (the question's prefix
is reused, not re-read), and training and serving read the same tokens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbqa.errors import ModelError
from kbqa.prompts.rerank import RERANK_INSTRUCTION, render_rerank_prefix, render_rerank_prompt

pytest.importorskip("llama_cpp")

QUESTION = "ঢাকা কোন নদীর তীরে অবস্থিত?"
PASSAGES = [
    ("ঢাকা", "ঢাকা বাংলাদেশের রাজধানী। এটি বুড়িগঙ্গা নদীর তীরে অবস্থিত।"),
    ("Paris", "Paris is the capital of France. It lies on the Seine."),
    ("", "পদ্মা বাংলাদেশের একটি প্রধান নদী।"),
]


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_gemma import tiny_gemma_gguf

    from kbqa.llm.models import resolve_model

    return tiny_gemma_gguf(resolve_model("gemma3-270m")[0], tmp_path_factory.mktemp("r") / "t.gguf")


def test_the_prompt_puts_the_question_first_and_ends_with_the_instruction() -> None:
    prompt = render_rerank_prompt("ঢাকা\u200b কোথায়? ", "ঢাকা", "x" * 5000)
    assert prompt.startswith(render_rerank_prefix("ঢাকা কোথায়?")) and "\u200b" not in prompt
    assert prompt.endswith("\n" + RERANK_INSTRUCTION)
    assert prompt.split("\n")[1] == "B: ঢাকা" and len(prompt) < 1500


def test_a_pair_scores_the_same_alone_after_others_and_whole(tiny_gguf: Path) -> None:
    from kbqa.llm.rerank import LlamaCppReranker

    reranker = LlamaCppReranker.from_path(tiny_gguf, None, n_ctx=512, n_threads=1)
    together = reranker.score(QUESTION, PASSAGES)
    alone = [reranker.score(QUESTION, [p])[0] for p in reversed(PASSAGES)][::-1]
    assert together == pytest.approx(alone, abs=1e-3)
    assert len(set(np.round(together, 4))) == 3, "three passages, three scores"
    # the whole prompt in a fresh context, no prefix reuse
    llama = reranker._llama
    for (title, text), score in zip(PASSAGES, together, strict=True):
        llama.reset()
        llama.eval(llama.tokenize(render_rerank_prompt(QUESTION, title, text).encode(), True))
        assert reranker._last_logit() == pytest.approx(score, abs=1e-3)
    assert reranker.score(QUESTION, []) == []


def test_a_pair_too_long_for_the_window_keeps_its_instruction(tiny_gguf: Path) -> None:
    from kbqa.llm.rerank import LlamaCppReranker

    reranker = LlamaCppReranker.from_path(tiny_gguf, None, n_ctx=64, n_threads=1)
    tokens = reranker._tokens(render_rerank_prompt(QUESTION, "t", "নদী " * 300), True)
    fitted = reranker._fit(tokens)
    tail = reranker._tokens("\n" + RERANK_INSTRUCTION, bos=False)
    assert len(fitted) == 64 and fitted[-len(tail) :] == tail
    assert np.isfinite(reranker.score(QUESTION, [("", "নদী " * 300)])[0])


def test_training_and_serving_read_the_same_tokens(tiny_gguf: Path) -> None:
    """The trainer tokenises the prompt with transformers and the target after a space
    (:func:`kbqa.finetune.loss.encode_example`); the scorer reads llama.cpp's logit of the same
    first target token after the same prompt tokens."""
    pytest.importorskip("transformers")
    from tiny_gemma import LlamaTokenizer

    from kbqa.llm.rerank import LlamaCppReranker
    from kbqa.prompts.rerank import RELEVANT

    tok = LlamaTokenizer(tiny_gguf)
    reranker = LlamaCppReranker.from_path(tiny_gguf, None, n_ctx=512, n_threads=1)
    assert reranker._yes == tok(" " + RELEVANT, add_special_tokens=False).input_ids[0]
    for title, text in PASSAGES:
        prompt = render_rerank_prompt(QUESTION, title, text)
        assert tok(prompt).input_ids == reranker._tokens(prompt, True)


def test_a_folder_that_is_not_a_reranker_is_named(tmp_path: Path) -> None:
    from kbqa.llm.rerank import is_reranker_dir, load_llm_reranker

    (tmp_path / "manifest.json").write_text('{"role": "reader"}', "utf-8")
    assert not is_reranker_dir(tmp_path) and not is_reranker_dir(tmp_path / "missing")
    with pytest.raises(ModelError, match="is not a reranker"):
        load_llm_reranker(tmp_path)


def test_the_shipped_reranker_is_served_by_its_name(tmp_path: Path) -> None:
    from kbqa.context import Context
    from kbqa.llm.lora import ADAPTERS_DIR, SHIPPED_RERANKERS
    from kbqa.llm.rerank import is_reranker_dir, reranker_dir

    for name in SHIPPED_RERANKERS:
        assert reranker_dir(name) == ADAPTERS_DIR / name and is_reranker_dir(name)
        manifest = (ADAPTERS_DIR / name / "manifest.json").read_text("utf-8")
        assert '"role": "reranker"' in manifest and "/work/" not in manifest
        assert (ADAPTERS_DIR / name / "NOTICE").is_file()
        assert (ADAPTERS_DIR / name / "adapter.gguf").stat().st_size < 20 * 2**20
        Context(index_dir=str(tmp_path), reranker=name).check_paths()
    assert reranker_dir("runs/reranker/adapter") == Path("runs/reranker/adapter")


@pytest.mark.integration
def test_the_shipped_reranker_puts_the_answering_passage_first() -> None:
    """The shipped cross-encoder on the real base model: of three passages, the one that
    answers scores highest, in Bangla and in English, whatever their order."""
    from kbqa.llm.rerank import load_llm_reranker

    reranker = load_llm_reranker("gemma3-270m-reranker", n_threads=2)
    cases = [
        (QUESTION, PASSAGES, 0),
        ("Where does Paris lie?", PASSAGES, 1),
    ]
    for question, passages, best in cases:
        for order in (passages, passages[::-1]):
            scores = reranker.score(question, list(order))
            assert int(np.argmax(scores)) == order.index(passages[best]), (question, scores)


def test_a_local_folder_spelt_with_dot_slash_is_that_folder_not_the_shipped_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A break-it finding: ``./gemma3-270m-reranker`` was checked as the shipped folder and
    loaded from the local one, so a reader's adapter there was served as a reranker."""
    from kbqa.llm.lora import ADAPTERS_DIR, load_adapter
    from kbqa.llm.rerank import load_llm_reranker, reranker_dir, reranker_dir_problem

    monkeypatch.chdir(tmp_path)
    local = tmp_path / "gemma3-270m-reranker"
    local.mkdir()
    (local / "manifest.json").write_text('{"role": "reader"}', "utf-8")
    assert reranker_dir(Path("./gemma3-270m-reranker")) == Path("gemma3-270m-reranker")
    assert "reader" in (reranker_dir_problem("./gemma3-270m-reranker") or "")
    with pytest.raises(ModelError, match=r"\./gemma3-270m-reranker is not a reranker"):
        load_llm_reranker("./gemma3-270m-reranker")
    (local / "manifest.json").write_text('{"role": "reranker"}', "utf-8")  # no adapter.gguf
    with pytest.raises(ModelError, match=r"LoRA adapter not found: \./gemma3-270m-reranker"):
        load_llm_reranker("./gemma3-270m-reranker")
    assert reranker_dir("gemma3-270m-reranker") == ADAPTERS_DIR / "gemma3-270m-reranker"
    with pytest.raises(ModelError, match="serve it with --reranker gemma3-270m-reranker"):
        load_adapter("gemma3-270m-reranker")  # given as --reader-adapter
