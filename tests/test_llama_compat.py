"""llama-cpp-python's detokenizer drops token pieces over 32 bytes (abetlen/llama-cpp-python#2362):
long Bangla words vanished from answers. kbqa installs a fix; this checks it on Gemma's real
vocabulary (loaded alone, in a fraction of a second)."""

from __future__ import annotations

import pytest

from kbqa.llm import llama_compat
from kbqa.llm.models import resolve_model

TEXT = " বাংলাদেশের প্রধানমন্ত্রী আন্তর্জাতিক সম্মেলনে ঢাকা থেকে যোগ দেন।"


@pytest.fixture(scope="module")
def vocab() -> object:
    from llama_cpp import Llama

    return Llama(model_path=str(resolve_model("gemma3-270m")[0]), vocab_only=True, verbose=False)


def test_long_tokens_survive_detokenisation(vocab: object) -> None:
    llama_compat.install()
    ids = vocab.tokenize(TEXT.encode(), add_bos=False)  # type: ignore[attr-defined]
    lengths = [len(vocab.detokenize([i])) for i in ids]  # type: ignore[attr-defined]
    assert max(lengths) > 32  # the text holds tokens the upstream 32-byte buffer drops
    assert vocab.detokenize(ids).decode() == TEXT  # type: ignore[attr-defined]
    with_bos = vocab.tokenize(TEXT.encode(), add_bos=True)  # type: ignore[attr-defined]
    assert vocab.detokenize(with_bos).decode() == TEXT.lstrip()  # type: ignore[attr-defined]
