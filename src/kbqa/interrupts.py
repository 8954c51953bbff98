"""Ctrl-C (SIGINT) held back while a block must not be cut short."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def deferred_interrupt(*, reraise: bool = True) -> Iterator[None]:
    """Hold a Ctrl-C that arrives during the block; when the block ends, raise it as
    :class:`KeyboardInterrupt` (``reraise``) or drop it (a clean-up already running because of
    an interruption, which a second Ctrl-C must not cut short).

    Used around llama.cpp's model load (a ``KeyboardInterrupt`` raised inside its ctypes log
    callback is printed and discarded, so the command went on to answer) and around the
    clean-up of an interrupted Milvus write. Outside the main thread (signals only reach it)
    the block runs unchanged.

    Raises:
        KeyboardInterrupt: With ``reraise``, when a Ctrl-C arrived during the block.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught and reraise:
        raise KeyboardInterrupt
