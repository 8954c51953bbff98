"""LangSmith tracing switches.

LangGraph traces every node through LangChain's callbacks when ``LANGSMITH_TRACING=true`` and
``LANGSMITH_API_KEY`` are set (``LANGSMITH_ENDPOINT`` picks the server, ``LANGSMITH_PROJECT`` the
project). Nothing here sends data on its own; with the variables unset nothing is sent at all.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langsmith import Client

_TRUE = {"1", "true", "yes", "on"}


def _env(*names: str) -> str:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return ""


def api_key_set() -> bool:
    """``LANGSMITH_API_KEY`` (or the older ``LANGCHAIN_API_KEY``) is set."""
    return bool(_env("LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"))


def tracing_enabled() -> bool:
    """Runs are traced: ``LANGSMITH_TRACING`` (or ``LANGCHAIN_TRACING_V2``) is true and a key is
    set."""
    flag = _env("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2").lower()
    return flag in _TRUE and api_key_set()


def upload_enabled() -> bool:
    """Evaluations upload an experiment: a LangSmith key is set."""
    return api_key_set()


def langsmith_client(upload: bool) -> Client:
    """A client for :func:`langsmith.evaluate`.

    For a local run (``upload=False``) the client is given the server's capabilities up front and
    does not batch-trace, so it never contacts a server (the default client asks ``/info``
    even when nothing is uploaded).
    """
    from langsmith import Client
    from langsmith.schemas import LangSmithInfo

    if upload:
        return Client()
    return Client(api_key="local-only", info=LangSmithInfo(), auto_batch_tracing=False)


def flush_traces() -> None:
    """Wait until queued traces are sent (call before a command exits). No-op when tracing is
    off."""
    if not tracing_enabled():
        return
    from langchain_core.tracers.langchain import wait_for_all_tracers

    wait_for_all_tracers()
