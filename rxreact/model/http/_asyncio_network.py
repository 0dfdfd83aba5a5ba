"""Loop mode's sockets: an httpcore network backend on plain asyncio protocols.

httpx's async transport reads through httpcore's anyio backend. Per read that is an anyio
``CancelScope`` (its deadline a loop timer, its enter and exit each a ``current_task``
lookup), a ``ResourceGuard``, an ``Event``, a ``map_exceptions`` context manager, and
``resume_reading`` / ``pause_reading`` around the wait: two ``epoll_ctl`` calls for every
chunk of a stream. rxreact's paced streams read one small chunk at a time, so at 1,000
concurrent runs that machinery was a fifth of the process's CPU (BENCHMARKS.md, "Scale,
fourth pass").

Here the connection is an ``asyncio.Protocol`` that stays registered for reading and
buffers what arrives. A read takes what is buffered without awaiting; only an empty buffer
makes it wait, on one future with one timer. Backpressure is the protocol's own: past
:data:`HIGH_WATER` bytes unread it pauses the transport, and a read that brings the buffer
below :data:`LOW_WATER` resumes it. Errors are httpcore's (``ConnectError``,
``ConnectTimeout``, ``ReadError``, ``ReadTimeout``, ``WriteError``, ``WriteTimeout``),
which httpx maps to its own as it does for any backend.

Used by the clients the model makes for itself in loop mode (:class:`AsyncioTransport`); a
client the caller passes keeps its own transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

__all__ = ["HIGH_WATER", "LOW_WATER", "AsyncioBackend", "AsyncioTransport"]

HIGH_WATER = 256 * 1024
"""Unread bytes past which a connection stops reading from its socket."""
LOW_WATER = 64 * 1024
"""Unread bytes below which a paused connection reads again."""

_SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class AsyncioTransport(httpx.AsyncHTTPTransport):
    """httpx's own async transport (its request and error mapping), its connection pool
    reading through :class:`AsyncioBackend`."""

    def __init__(self, *, limits: httpx.Limits, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, limits=limits)
        # httpx has no argument for the network backend: the pool it made is replaced by the
        # same pool on ours (httpx's handle_async_request only calls ``self._pool``).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=AsyncioBackend(),
        )


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connections as asyncio protocols (see the module docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        with _connect_errors():
            async with asyncio.timeout(timeout):
                # Happy eyeballs, as anyio's connect_tcp does (IPv6 and IPv4 raced, 250 ms).
                transport, protocol = await loop.create_connection(
                    _Connection, host, port, local_addr=local, happy_eyeballs_delay=0.25
                )
        return _Stream(transport, protocol, socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        with _connect_errors():
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_unix_connection(_Connection, path)
        return _Stream(transport, protocol, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _Connection(asyncio.Protocol):
    """What arrived on one connection and not read yet, and who waits for it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.unread: deque[bytes] = deque()
        self.unread_bytes = 0
        self.reader: asyncio.Future[None] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.ended = False  # EOF, or the connection is lost
        self.error: Exception | None = None
        self.reading_paused = False
        self.writing_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.unread.append(data)
        self.unread_bytes += len(data)
        if self.unread_bytes > HIGH_WATER and not self.reading_paused:
            self.reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        _wake(self.reader)

    def eof_received(self) -> bool:
        self.ended = True
        _wake(self.reader)
        return False  # close the transport: HTTP/1.1 has no use for a half-open connection

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        _wake(self.reader)
        _wake(self.drained)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        _wake(self.drained)


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(
        self,
        transport: asyncio.Transport,
        connection: _Connection,
        socket_options: Iterable[_SocketOption] | None = None,
    ) -> None:
        self._transport = transport
        self._connection = connection
        connection.transport = transport  # after start_tls: the TLS transport
        # Read now: a closed TLS transport of asyncio's raises on get_extra_info.
        self._extra = {info: transport.get_extra_info(key) for info, key in _EXTRA_INFO.items()}
        for option in socket_options or ():
            self._extra["socket"].setsockopt(*option)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        connection = self._connection
        unread = connection.unread
        if not unread:
            if connection.ended:
                return _at_end(connection)
            loop = asyncio.get_running_loop()
            reader = connection.reader = loop.create_future()
            timer = None if timeout is None else loop.call_later(timeout, _expire, reader)
            try:
                await reader
            except TimeoutError:
                raise httpcore.ReadTimeout(f"no data for {timeout} s") from None
            finally:
                connection.reader = None
                if timer is not None:
                    timer.cancel()
            if not unread:
                return _at_end(connection)
        data = unread.popleft()
        if len(data) > max_bytes:
            unread.appendleft(data[max_bytes:])
            data = data[:max_bytes]
        connection.unread_bytes -= len(data)
        if connection.reading_paused and connection.unread_bytes < LOW_WATER:
            connection.reading_paused = False
            self._transport.resume_reading()
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        connection = self._connection
        if connection.ended or self._transport.is_closing():
            raise _closed(connection)
        self._transport.write(buffer)
        if not connection.writing_paused:
            return
        drained = connection.drained = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await drained
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not write for {timeout} s") from None
        finally:
            connection.drained = None
        if connection.ended:
            raise _closed(connection)

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            with _connect_errors():
                async with asyncio.timeout(timeout):
                    transport = await loop.start_tls(
                        self._transport,
                        self._connection,
                        ssl_context,
                        server_hostname=server_hostname,
                    )
        except BaseException:
            self._transport.close()
            raise
        assert isinstance(transport, asyncio.Transport)
        return _Stream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # httpcore asks of an idle pooled connection: anything to read (or the end) means
            # the server closed it or broke the protocol, so it is not reused. The protocol
            # keeps reading while idle, so the answer is already here, without a poll().
            return self._connection.ended or bool(self._connection.unread)
        return self._extra.get(info)


_EXTRA_INFO = {
    "ssl_object": "ssl_object",
    "client_addr": "sockname",
    "server_addr": "peername",
    "socket": "socket",
}
"""httpcore's names for a stream's facts -> asyncio's transport extra-info names."""


@contextlib.contextmanager
def _connect_errors() -> Iterator[None]:
    """Connecting (or the TLS handshake) failed: as httpcore's ``ConnectTimeout`` /
    ``ConnectError``."""
    try:
        yield
    except TimeoutError as error:  # before OSError, of which it is one
        raise httpcore.ConnectTimeout(str(error) or "timed out") from None
    except OSError as error:  # ssl.SSLError included
        raise httpcore.ConnectError(str(error) or type(error).__name__) from error


def _at_end(connection: _Connection) -> bytes:
    """A read after the end: EOF (``b""``, which httpcore judges), or the connection's error."""
    if connection.error is not None:
        raise httpcore.ReadError(str(connection.error) or type(connection.error).__name__)
    return b""


def _closed(connection: _Connection) -> httpcore.WriteError:
    """A write to a connection that has ended."""
    return httpcore.WriteError(f"connection closed: {connection.error or 'by the peer'}")


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())
