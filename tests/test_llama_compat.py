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


def test_a_ctrl_c_during_a_model_load_is_not_lost() -> None:
    """Issue 15 item 11: llama.cpp's log callback (a ctypes callback) swallowed the
    KeyboardInterrupt of a Ctrl-C during the load, and the command went on."""
    import ctypes
    import os
    import signal

    import pytest

    from kbqa.interrupts import deferred_interrupt

    seen: list[str] = []
    callback = ctypes.CFUNCTYPE(None)(lambda: seen.append("called back"))

    def load() -> None:  # what llama.cpp's load does: C code that calls back into Python
        os.kill(os.getpid(), signal.SIGINT)
        callback()
        seen.append("load finished")

    with pytest.raises(KeyboardInterrupt), deferred_interrupt():
        load()
    assert seen == ["called back", "load finished"]  # the load completes, then it stops
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_clean_up_drops_the_ctrl_c_it_held() -> None:
    """``reraise=False`` (the clean-up of an interrupted Milvus write): a Ctrl-C during the
    block neither cuts it short nor is raised after it; the handler is restored."""
    import os
    import signal

    from kbqa.interrupts import deferred_interrupt

    done = []
    with deferred_interrupt(reraise=False):
        os.kill(os.getpid(), signal.SIGINT)
        done.append("cleaned up")
    assert done == ["cleaned up"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
