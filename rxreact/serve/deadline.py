"""A total deadline for each request's headers and body, for ``rxreact serve``'s uvicorn.

uvicorn times out idle keep-alive connections but not a request that arrives slowly: a
client sending a byte every few seconds keeps its connection (and a slot of
``limit_concurrency``) forever, and two hundred of them hold the server. Here each request
gets ``request_deadline`` seconds in total from its first byte until its body is complete
(not per read: a byte every 5 s does not extend it); past that the server answers
``408 Request Timeout`` if it has not begun a response, and closes the connection. What the
app takes to answer is not counted: a streamed answer may go on for as long as the run does.

The protocol is uvicorn's h11 one with the deadline added (``uvicorn.Config(http=...)``); it
reads the deadline from the config (:func:`with_request_deadline`), so a config pickled for
``--workers`` carries it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["DEFAULT_REQUEST_DEADLINE", "H11WithDeadline", "with_request_deadline"]

log: logging.Logger = logging.getLogger(__name__)

DEFAULT_REQUEST_DEADLINE = 60.0
"""Seconds a request's headers and body may take to arrive, in total."""

_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_RECEIVED = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.SWITCHED_PROTOCOL)


def with_request_deadline(config: Any, seconds: float) -> Any:
    """``config`` (a ``uvicorn.Config``) serving with :class:`H11WithDeadline` and a deadline
    of ``seconds`` for each request's headers and body."""
    if not seconds > 0:
        raise ValueError("the request deadline must be a positive number of seconds")
    config.http = H11WithDeadline
    config.rxreact_request_deadline = float(seconds)
    return config


class H11WithDeadline(H11Protocol):
    """uvicorn's h11 protocol, with a total deadline on each request's arrival."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self._deadline_s = float(getattr(config, "rxreact_request_deadline", 0) or 0) or (
            DEFAULT_REQUEST_DEADLINE
        )
        self._deadline: asyncio.TimerHandle | None = None

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state not in _RECEIVED:
            # The first bytes of a request (or of the next one on a kept-alive connection).
            self._deadline = self.loop.call_later(self._deadline_s, self._too_slow)
        super().data_received(data)
        if self.conn.their_state in _RECEIVED:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.conn.their_state in _RECEIVED or self.transport.is_closing():
            return
        client = "%s:%d" % self.client if self.client else "a client"  # noqa: UP031
        log.info("%s took over %g s to send a request: closed", client, self._deadline_s)
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_TIMEOUT)
        self.transport.close()
