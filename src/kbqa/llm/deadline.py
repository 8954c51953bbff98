"""A deadline for a whole HTTP request, its streamed body included: httpx's timeouts are per
read, so a server that sends a keep-alive comment every few seconds never reaches them. The
served reader's client (:mod:`kbqa.llm.server`) sends through :class:`DeadlineTransport`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport whose every request, its response headers and body included, must
    finish within ``seconds`` of being sent. A body still arriving then raises
    ``httpx.ReadTimeout`` at its next chunk; headers still arriving (a server that sends one
    header line at a time) are cut off by a timer that closes the transport's connections, and
    the transport then opens new ones for the next request. (A server silent for ``seconds`` is
    the per-read timeout's.) One request at a time: the timer closes every connection.

    Args:
        seconds: The deadline of one request.
        inner: A factory of the transport that sends (default: ``httpx.HTTPTransport``).
    """

    def __init__(
        self, seconds: float, inner: Callable[[], httpx.BaseTransport] | None = None
    ) -> None:
        self.seconds = seconds
        self._make = inner or httpx.HTTPTransport
        self.inner = self._make()
        self._expired = threading.Event()

    def _expire(self, transport: httpx.BaseTransport) -> None:
        self._expired.set()
        transport.close()  # the blocked header read fails now

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = time.monotonic() + self.seconds
        transport = self.inner
        self._expired.clear()
        timer = threading.Timer(self.seconds, self._expire, args=(transport,))
        timer.daemon = True
        timer.start()
        try:
            response = transport.handle_request(request)
        except Exception:
            if not self._expired.is_set():
                raise
            self.inner = self._make()  # the old one's connections are closed
            raise httpx.ReadTimeout(
                f"the reply's headers took longer than the --llm-timeout of {self.seconds:g} s",
                request=request,
            ) from None
        finally:
            timer.cancel()
        if self._expired.is_set():  # the timer fired as the headers completed
            self.inner = self._make()
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
