"""A deadline for a whole HTTP request, its streamed body included: httpx's timeouts are per
read, so a server that sends a keep-alive comment every few seconds never reaches them. The
served reader's client (:mod:`kbqa.llm.server`) sends through :class:`DeadlineTransport`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport whose every request, its response body included, must finish within
    ``seconds`` of being sent; a body still arriving then raises ``httpx.ReadTimeout`` at its
    next chunk. (A server silent for ``seconds`` is the per-read timeout's.)

    Args:
        seconds: The deadline of one request.
        inner: The transport that sends (default: ``httpx.HTTPTransport()``).
    """

    def __init__(self, seconds: float, inner: httpx.BaseTransport | None = None) -> None:
        self.seconds = seconds
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        response = self.inner.handle_request(request)
        response.stream = _DeadlineStream(response.stream, deadline, self.seconds, request)
        return response

    def close(self) -> None:
        self.inner.close()


class _DeadlineStream(httpx.SyncByteStream):
    def __init__(self, inner: Any, deadline: float, seconds: float, request: httpx.Request) -> None:
        self.inner, self.deadline, self.seconds, self.request = inner, deadline, seconds, request

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            if time.monotonic() > self.deadline:
                raise httpx.ReadTimeout(
                    f"the reply took longer than the --llm-timeout of {self.seconds:g} s",
                    request=self.request,
                )
            yield chunk

    def close(self) -> None:
        self.inner.close()
