"""Read an HTTP/1.1 chunked SSE body in whole socket reads instead of one h11 event per chunk.

Why: providers send one HTTP chunk per SSE event, so httpx's ``iter_raw`` costs one h11
``next_event`` and five generator layers (httpx, httpcore, h11) *per token*: ~6.5 µs of the
~16 µs the whole agent loop spent per chunk (``python -m benchmarks.profile``). Reading the
socket 64 KiB at a time and removing the chunk framing here costs ~0.4 µs per chunk, and the
SSE decoder then sees every event of a read in one buffer.

How: httpx still does everything up to the response headers (connection pool, proxies, TLS,
the request, redirects of the status line, errors). For a ``Transfer-Encoding: chunked``
HTTP/1.1 response without ``Content-Encoding``, :func:`chunked_body` finds the connection's
h11 state machine and network stream, takes the body bytes h11 already buffered
(``h11.Connection.trailing_data``, public) and reads the rest of the body from the network
stream itself. When the body ends cleanly, h11 is handed a terminating ``0\\r\\n\\r\\n`` in
place of what it had buffered, so httpcore sees the end of the message and returns the
connection to its pool for the next request, as after a normal read.

The objects reached are private to httpcore 1.x (``_stream``, ``_connection``,
``_h11_state``, ``_network_stream``): every step is checked, and when anything is not as
expected (another httpcore, HTTP/2, a custom transport, a mock transport) the caller gets
``None`` and reads with ``iter_raw`` as before. Both paths run the same test suite.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import h11
import httpcore
import httpx

__all__ = ["AsyncChunkedBody", "ChunkedBody", "ChunkedDecoder", "achunked_body", "chunked_body"]

_READ_SIZE = 1 << 16
"""Bytes asked of the socket per read (httpcore's own read size)."""
_MAX_LINE = 4096
"""Longest chunk-size or trailer line accepted (h11 accepts a few KiB of header line too)."""
_MAX_TRAILERS = 1 << 16
"""Most trailer bytes accepted after the last chunk."""
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?\r\n")
_END_OF_MESSAGE = b"0\r\n\r\n"

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)


class ChunkedFramingError(httpx.RemoteProtocolError):
    """The chunked framing is malformed (a broken body, handled as httpx's own would be)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ChunkedDecoder:
    """Incremental decoder of the chunked transfer coding (RFC 9112 §7.1) over whole reads.

    ``feed`` takes any split of the body and returns the payload bytes it completed, chunk
    data being passed through as soon as it arrives (a chunk split across reads is not held
    back). Chunk extensions and trailers are read and ignored. ``done`` turns true after the
    last chunk and its trailer section; ``leftover`` counts bytes fed after that.
    """

    __slots__ = ("_pending", "_remaining", "_state", "_trailer_bytes", "leftover")

    def __init__(self) -> None:
        self._pending = b""
        self._state = _SIZE
        self._remaining = 0
        self._trailer_bytes = 0
        self.leftover = 0
        """Bytes received after the end of the body (none from a well-behaved server)."""

    @property
    def done(self) -> bool:
        """True once the last chunk and the trailer section were read."""
        return self._state == _DONE

    def feed(self, data: bytes) -> bytes:
        """Decode ``data``; return the payload it completes (possibly ``b""``).

        Raises:
            ChunkedFramingError: a malformed chunk-size line, chunk end or trailer section.
        """
        if self._state == _DONE:
            self.leftover += len(data)
            return b""
        buf = self._pending + data if self._pending else data
        self._pending = b""
        end = len(buf)
        pos = 0
        out: list[bytes] = []
        state = self._state
        match_size = _SIZE_LINE.match
        while pos < end:
            if state == _DATA:
                take = min(self._remaining, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._remaining -= take
                if self._remaining:
                    break
                state = _DATA_END
            elif state == _DATA_END:
                if end - pos < 2:
                    break
                if buf[pos : pos + 2] != b"\r\n":
                    raise ChunkedFramingError("chunk data not followed by CRLF")
                pos += 2
                state = _SIZE
            elif state == _SIZE:
                m = match_size(buf, pos)
                if m is None:
                    line_end = buf.find(b"\r\n", pos, pos + _MAX_LINE)
                    if line_end >= 0 or end - pos >= _MAX_LINE:
                        raise ChunkedFramingError(f"bad chunk size line {buf[pos : pos + 40]!r}")
                    break
                size = int(m.group(1), 16)
                pos = m.end()
                if size:
                    self._remaining = size
                    state = _DATA
                else:
                    state = _TRAILER
            elif state == _TRAILER:
                line_end = buf.find(b"\r\n", pos)
                if line_end < 0:
                    if end - pos >= _MAX_LINE:
                        raise ChunkedFramingError("trailer line too long")
                    break
                self._trailer_bytes += line_end + 2 - pos
                if self._trailer_bytes > _MAX_TRAILERS:
                    raise ChunkedFramingError("trailer section too long")
                empty = line_end == pos
                pos = line_end + 2
                if empty:
                    state = _DONE
                    self.leftover = end - pos
                    pos = end
        self._state = state
        if pos < end:
            self._pending = buf[pos:]
        if not out:
            return b""
        return out[0] if len(out) == 1 else b"".join(out)


def _http11_link(response: httpx.Response) -> tuple[Any, Any] | None:
    """The h11 connection and network stream under ``response``, or ``None``."""
    if response.http_version != "HTTP/1.1" or "content-encoding" in response.headers:
        return None
    if response.headers.get("transfer-encoding", "").lower() != "chunked":
        return None
    try:
        stream = response.stream._stream._httpcore_stream._stream  # type: ignore[union-attr]
        connection = stream._connection
        h11_state = connection._h11_state
        network = connection._network_stream
    except AttributeError:
        return None
    if type(stream).__name__ != "HTTP11ConnectionByteStream" or not hasattr(
        h11_state, "trailing_data"
    ):
        return None
    # Only right after the headers: once httpx read some of the body, h11's reader has moved.
    if response.is_stream_consumed or getattr(h11_state, "their_state", None) is not h11.SEND_BODY:
        return None
    return h11_state, network


def _hand_back(h11_state: Any, decoder: ChunkedDecoder) -> bool:
    """Give h11 the end of the message, so httpcore returns the connection to its pool."""
    buffer = getattr(h11_state, "_receive_buffer", None)
    if decoder.leftover or buffer is None:
        return False  # bytes after the body: let httpcore close the connection
    h11_state._receive_buffer = type(buffer)()
    h11_state.receive_data(_END_OF_MESSAGE)
    return True


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """httpcore's read errors as the httpx ones ``iter_raw`` raises for them."""
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise httpx.ReadTimeout(str(exc)) from exc
    except httpcore.NetworkError as exc:
        raise httpx.ReadError(str(exc)) from exc


def chunked_body(response: httpx.Response, read_timeout: float | None) -> ChunkedBody | None:
    """The decoded body of ``response`` in socket-sized pieces, or ``None`` (use ``iter_raw``).

    The iterator ends at the end of the body (or at EOF, or with ``httpx.ReadError`` /
    ``httpx.ReadTimeout`` / :class:`ChunkedFramingError`, which are what ``iter_raw`` raises
    for the same failures). Run to its end, it hands the connection back for reuse.
    """
    link = _http11_link(response)
    if link is None:
        return None
    return ChunkedBody(response, link[0], link[1], read_timeout)


class ChunkedBody:
    """One pass over a chunked body (an iterator); ``read_timeout`` applies from the next read.

    Lowering it after the last event that matters (``[DONE]``) bounds the wait for the end of
    the body, read only so that the connection can be reused.
    """

    def __init__(
        self, response: httpx.Response, h11_state: Any, network: Any, read_timeout: float | None
    ) -> None:
        self.read_timeout = read_timeout
        self._pieces = self._read(response, h11_state, network)

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces

    def __next__(self) -> bytes:
        return next(self._pieces)

    def _read(self, response: httpx.Response, h11_state: Any, network: Any) -> Iterator[bytes]:
        decoder = ChunkedDecoder()
        data, closed = h11_state.trailing_data
        while True:
            if data:
                payload = decoder.feed(data)
                if payload:
                    yield payload
                if decoder.done:
                    break
            if closed:
                return
            with _as_httpx_errors():
                data = network.read(_READ_SIZE, self.read_timeout)
            if not data:
                return  # EOF before the end of the body
        if _hand_back(h11_state, decoder):
            for _ in response.iter_raw():  # h11 reads the end of the message
                pass


def achunked_body(response: httpx.Response, read_timeout: float | None) -> AsyncChunkedBody | None:
    """:func:`chunked_body` for a response of an ``httpx.AsyncClient``."""
    link = _http11_link(response)
    if link is None:
        return None
    return AsyncChunkedBody(response, link[0], link[1], read_timeout)


class AsyncChunkedBody:
    """:class:`ChunkedBody` for the I/O loop (an async iterator), the same settable timeout.

    The wait for the end of the body is bounded by ``read_timeout`` on each read, not by
    cancelling the reading task: a cancellation that lands while httpcore closes the response
    (its shield does not hold against asyncio's own ``Task.cancel``) leaves the request
    counted in its pool for good, and a full pool then fails new requests with ``PoolTimeout``
    (seen under a heavily loaded loop, where a timer is often already due when a read ends).

    With no ``read_timeout`` (loop mode's reads: the call's watchdog bounds the silences by
    cancelling the task mid-read, where httpcore cleans up), a read goes straight to anyio's
    socket stream: httpcore's ``read`` would open a cancel scope and an exception map per
    read, about as much CPU as decoding the read's events.
    """

    def __init__(
        self, response: httpx.Response, h11_state: Any, network: Any, read_timeout: float | None
    ) -> None:
        self.read_timeout = read_timeout
        self._pieces = self._read(response, h11_state, network)

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces

    async def __anext__(self) -> bytes:
        return await anext(self._pieces)

    # The twin of ChunkedBody._read, as httpcore has twin sync and async connections.
    async def _read(
        self, response: httpx.Response, h11_state: Any, network: Any
    ) -> AsyncIterator[bytes]:
        decoder = ChunkedDecoder()
        data, closed = h11_state.trailing_data
        receive = getattr(getattr(network, "_stream", None), "receive", None)
        while True:
            if data:
                payload = decoder.feed(data)
                if payload:
                    yield payload
                if decoder.done:
                    break
            if closed:
                return
            if self.read_timeout is None and receive is not None:
                data = await _receive(receive)
            else:
                with _as_httpx_errors():
                    data = await network.read(_READ_SIZE, self.read_timeout)
            if not data:
                return
        if _hand_back(h11_state, decoder):
            async for _ in response.aiter_raw():
                pass


async def _receive(receive: Callable[[int], Awaitable[bytes]]) -> bytes:
    """One read from anyio's stream, its errors as httpcore's ``read`` maps them."""
    try:
        return await receive(_READ_SIZE)
    except anyio.EndOfStream:
        return b""
    except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
        raise httpx.ReadError(str(exc)) from exc
