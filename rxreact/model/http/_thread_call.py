"""Thread mode's model call: each attempt blocks a thread of its own.

Threads of the thread mode, and why:

- **I/O thread.** Each attempt (the blocking httpx request and read loop) runs on the I/O
  scheduler, by default a new daemon thread per attempt (:data:`IO_SCHEDULER`). A stream holds
  its thread for as long as the model talks (seconds to minutes); a bounded pool would queue
  new streams behind long ones, with their first-chunk clocks already running. A thread start
  costs ~0.1 ms, nothing next to an HTTP round trip. ``on_next`` is called on that thread.
- **Cancellation.** A thread blocked in ``recv`` is not woken by closing the httpx response
  from another thread, but it is by shutting the socket down: a dispose
  (:meth:`~rxreact.model.http._call.ModelCall.dispose`) and the watchdog do that. Every
  emission holds a lock and checks a flag, so once ``dispose()`` has returned nothing more
  reaches the observer. Once the events are all read the socket is released
  (:meth:`ThreadCall.release_socket`) and never shut down after completion: the end of the
  body returns the connection to the pool, where the next request may have it.

Before the response headers arrive on a *reused* keep-alive connection, httpcore reports no
socket (it does only when it opens a connection): :attr:`ThreadCall.locate` asks the pool
for it (:mod:`rxreact.model.http._pooled`), so the watchdog and a dispose shut it down there too,
even while the headers trickle in a byte at a time. Should the pool not say (another
transport), httpx's own read timeout, the first-chunk limit until the headers arrive, still
ends a silent wait. Known limits: with hundreds of threads sharing one pool, httpcore can close
a keep-alive connection it has just handed to a request (encode/httpcore#1110, open): that
stream then fails with ``StreamInterruptedError`` (seen once in 1,000 runs at 1,000 threads;
loop mode is the mode for that many streams anyway).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import httpx
from reactivex import abc
from reactivex.scheduler import NewThreadScheduler

from rxreact.model.http._call import CallSettings, ModelCall, Stopped

__all__ = ["IO_SCHEDULER", "ThreadCall"]

_T = TypeVar("_T")

IO_SCHEDULER: abc.SchedulerBase = NewThreadScheduler(
    lambda target: threading.Thread(target=target, daemon=True, name="rxreact-http")
)
"""The default I/O scheduler: one daemon thread per attempt (see the module docstring)."""


class ThreadCall(ModelCall[_T]):
    """Each attempt blocks an I/O-scheduler thread; a read is aborted by a socket shutdown.

    ``attempt(call)`` sends the request and wraps the response in :meth:`attached`.
    """

    def __init__(
        self,
        attempt: Callable[[ThreadCall[_T]], None],
        observer: abc.ObserverBase[_T],
        settings: CallSettings,
        io_scheduler: abc.SchedulerBase,
    ) -> None:
        super().__init__(observer, settings)
        self._attempt = attempt
        self._io = io_scheduler
        self._sock: socket.socket | None = None
        self.locate: Callable[[], socket.socket | None] | None = None
        """Set by the attempt until the headers arrive: finds the socket of a reused
        connection, which no trace event reports (see :mod:`rxreact.model.http._pooled`)."""

    def trace(self, name: str, info: dict[str, Any]) -> None:
        """httpx ``trace`` extension: learn the socket of a new connection before the headers."""
        if name in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            if stream is not None:
                self._register(stream.get_extra_info("socket"))

    @contextlib.contextmanager
    def attached(self, response: httpx.Response) -> Iterator[httpx.Response]:
        """Make ``response`` abortable while the block runs.

        The socket is forgotten before the block ends, that is before httpx returns the
        connection to its pool, so a late dispose cannot shut down someone else's request.
        HTTP/2 multiplexes requests on one socket, so it is never shut down for one of them.
        """
        self.headers_in()
        self.locate = None
        if response.http_version != "HTTP/2":
            stream = response.extensions.get("network_stream")
            if stream is not None:
                self._register(stream.get_extra_info("socket"))
        try:
            yield response
        finally:
            with self._lock:
                self._sock = None

    def release_socket(self) -> None:
        """From now on this attempt's reads are not aborted by a shutdown (see :meth:`_abort`):
        called once the events are all read, before the end of the body goes back to the pool.
        """
        with self._lock:
            self._sock = None

    def _schedule_attempt(self) -> None:
        self._task.replace_with(lambda: self._io.schedule(self._run))

    def _abort(self) -> None:
        # A thread blocked in recv is woken by a shutdown, not by closing the response.
        # Called with the lock held. Never once the stream completed: the reader is then only
        # reading the end of the body, and may already have handed the connection back to the
        # pool (the end of the body does that, inside ``attached``), where the next request
        # can have it. The subscriber's dispose right after on_completed must not break it.
        if self._done and self._timed_out is None:
            return  # completed (see above); a timeout delivered early still frees the socket
        sock = self._sock
        if sock is None and self.locate is not None:
            # Before the headers on a reused connection: ask the pool (the headers may be
            # trickling in, every read within its timeout, for as long as the server likes).
            sock = self.locate()
        if sock is not None:
            with contextlib.suppress(OSError):
                # The base-class method: SSLSocket.shutdown would also drop its SSL object
                # under the feet of the reading thread.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        elif self._timed_out is not None:
            # No socket to wake the reader with (yet: a connection still opening registers
            # its socket later, and is shut down then): the subscriber hears the timeout now,
            # at the limit, and the thread ends whenever its read does.
            self._fail(self._timed_out)

    def _attempt_ended(self) -> None:
        self._sock = None
        self.locate = None

    def _register(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self._disposed or self._timed_out is not None:
                self._abort()

    def _run(self, _: abc.SchedulerBase, __: Any = None) -> None:
        if not self._begin():
            return
        error: Exception | None = None
        try:
            self._attempt(self)
        except Stopped:
            pass
        except Exception as exc:
            error = exc
        self._end(error)
