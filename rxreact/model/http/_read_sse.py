"""The SSE read loop of a streamed response: bytes → events → chunks, and the end rules.

Per chunk, the loop does one ``parse`` of the wire format's
:class:`~rxreact.model.http.codec.StreamParser` and one ``emit``; the
SSE decoder and the watchdog's clock work per read (one read often carries many events), and
``<think>`` splitting costs one call per text chunk only until the text is known to be plain
answer. No ``iter_lines``: the decoder splits whole byte buffers, and for the usual chunked
HTTP/1.1 body those are whole socket reads (:mod:`~rxreact.model.http._chunked`), not one h11
event per SSE event.

:class:`_Events` is everything but the reading, shared by :func:`read_sse` (a blocking
response, thread mode) and :func:`aread_sse` (an async one on the I/O loop, which also waits
for its valve between reads: see :mod:`rxreact.rx._valve`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import httpx

from rxreact.errors import ResponseTooLargeError
from rxreact.model.chunks import ChatChunk
from rxreact.model.http._aio import LoopCall
from rxreact.model.http._call import ModelCall
from rxreact.model.http._chunked import achunked_body, chunked_body
from rxreact.model.http._thread_call import ThreadCall
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import StreamLimits
from rxreact.model.http.sse import SSEEvent
from rxreact.model.http.surrogates import SurrogateChunk, SurrogatePairing
from rxreact.model.http.think import ThinkTagSplitter

__all__ = ["aread_sse", "read_sse"]

_DRAIN_LIMIT = 1 << 16
"""Bytes read after ``[DONE]`` to reach the end of the body, so the connection can be reused."""
_DRAIN_SECONDS = 1.0
"""The longest wait for the end of the body after ``[DONE]`` (then the connection is closed)."""
_EMPTY_CHUNK = ChatChunk()
_NO_LIMITS = StreamLimits(None, None)
_BROKEN = (httpx.RemoteProtocolError, httpx.ReadError)
"""A connection broken mid-body is an end of the body: the end rules decide what it means."""


def read_sse(
    response: httpx.Response,
    call: ThreadCall[ChatChunk],
    parser: StreamParser,
    think_tags: bool,
    limits: StreamLimits = _NO_LIMITS,
) -> None:
    """Emit the chunks of an SSE response body until the parser's terminal event or the end
    of the body.

    The terminal event (``[DONE]``, ``message_stop``...) ends the stream; at the end of the
    body without it, the parser's :meth:`~rxreact.model.http.codec.StreamParser.end` decides
    (chat completions accepts a body cut after a finish reason: it loses nothing; the others
    raise :class:`StreamInterruptedError`). A connection broken mid-body is such an end.
    Provider errors raised by the parser propagate as they are, and so does
    :class:`~rxreact.errors.ResponseTooLargeError` when ``limits`` are passed.

    The end of the body is read too, so that httpx can reuse the connection. On the chunked
    fast path that happens before completing, bounded by :data:`_DRAIN_SECONDS`, as in loop
    mode: the connection is back in the pool when the subscriber's next request (the agent's
    next round) asks for one. Through httpx's own ``iter_raw`` the wait could not be bounded,
    so there the stream completes first and the end of the body is read after.
    """
    events = _Events(call, parser, think_tags, limits)
    feed, handle, batch_read = events.decoder.feed, events.handle, call.batch_read
    fast = chunked_body(response, call.timeouts.body_read)
    pieces = fast or (
        response.iter_bytes() if "content-encoding" in response.headers else response.iter_raw()
    )
    done = False
    with contextlib.suppress(*_BROKEN):
        for piece in pieces:
            batch = feed(piece)
            if batch:
                if handle(batch):
                    done = True
                    break
                batch_read()
    if fast is None:
        events.end(done)
        _drain(pieces)
        return
    events.end(done, finish=False)
    # The reading that matters is over: from here a dispose must not shut the socket down,
    # since the end of the body hands the connection back to the pool (for someone else).
    call.release_socket()
    fast.read_timeout = _DRAIN_SECONDS
    _drain(pieces)
    call.finish()


def _drain(pieces: Iterator[bytes]) -> None:
    """Read the rest of the body (at most :data:`_DRAIN_LIMIT` bytes), ignoring failures."""
    read = 0
    with contextlib.suppress(httpx.HTTPError):
        for piece in pieces:
            read += len(piece)
            if read > _DRAIN_LIMIT:
                return


async def aread_sse(
    response: httpx.Response,
    call: LoopCall[ChatChunk],
    parser: StreamParser,
    think_tags: bool,
    limits: StreamLimits = _NO_LIMITS,
) -> None:
    """:func:`read_sse` for an async response, on the I/O loop, except that it does not
    complete: the attempt does, once the response is closed (see below).

    After each read's events, a closed valve (a full consumer) is awaited open before the
    next read; meanwhile the call stays busy, so the watchdog does not take the wait for a
    silent server.
    """
    events = _Events(call, parser, think_tags, limits)
    feed, handle, batch_read = events.decoder.feed, events.handle, call.batch_read
    valve = call.valve
    # No read timeout on the fast path: the watchdog bounds the silences (it cancels the task).
    fast = achunked_body(response, None)
    pieces: AsyncIterator[bytes] = fast or (
        response.aiter_bytes() if "content-encoding" in response.headers else response.aiter_raw()
    )
    done = False
    with contextlib.suppress(*_BROKEN):
        async for piece in pieces:
            batch = feed(piece)
            if batch:
                if handle(batch):
                    done = True
                    break
                if valve.closed:
                    await valve.wait_open()
                batch_read()
    events.end(done, finish=False)
    call.busy = True  # the watchdog must not time the drain out of a stream that has ended
    call.draining = True  # nor a dispose cancel it (see LoopCall._abort)
    # The rest of the body, before completing: the connection must be back in the pool when
    # the subscriber's next request (the agent's next round) asks for one. Else every round
    # opens a connection while the last one idles, and httpcore's pool, which scans all its
    # connections for each idle one on every request, goes quadratic.
    read = 0
    if fast is not None:
        # Bounded per read, not by cancelling the task: see AsyncChunkedBody.
        fast.read_timeout = _DRAIN_SECONDS
        with contextlib.suppress(httpx.HTTPError):
            async for piece in fast:
                read += len(piece)
                if read > _DRAIN_LIMIT:
                    return
        return
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for piece in pieces:
                read += len(piece)
                if read > _DRAIN_LIMIT:
                    return


class _Events:
    """Decoded events → emitted chunks, and the end rules; the reading is the caller's."""

    __slots__ = (
        "_arguments",
        "_call",
        "_max_arguments",
        "_pairing",
        "_parser",
        "_saw_finish",
        "_splitter",
        "decoder",
    )

    def __init__(
        self,
        call: ModelCall[ChatChunk],
        parser: StreamParser,
        think_tags: bool,
        limits: StreamLimits,
    ) -> None:
        self._call = call
        self._parser = parser
        self.decoder = parser.new_decoder(limits.max_line_bytes)
        self._max_arguments = limits.max_tool_arguments
        self._arguments = 0  # characters of tool-call arguments so far
        self._splitter = ThinkTagSplitter() if think_tags else None
        self._saw_finish = False
        self._pairing: SurrogatePairing | None = None  # from the first lone surrogate on

    def handle(self, events: list[SSEEvent]) -> bool:
        """Emit what the events carry (the call is busy meanwhile); True at the terminal event."""
        call = self._call
        emit = call.emit
        splitter = self._splitter
        parser = self._parser
        parse, terminal = parser.parse, parser.terminal_data
        call.busy = True
        for event in events:
            data = event.data
            if data == terminal:
                return True
            chunk = parse(data, event.event)
            if chunk is None:
                if parser.done:
                    return True
                continue
            if chunk.finish_reason is not None:
                self._saw_finish = True
            if chunk.tool_calls and self._max_arguments is not None:
                self._count_arguments(chunk)
            if self._pairing is not None or type(chunk) is SurrogateChunk:
                chunk = self._paired(chunk)
                if chunk == _EMPTY_CHUNK:
                    continue
            if splitter is not None and chunk.text:
                chunk = _split_think(splitter, chunk)
                if splitter.passing_through:
                    splitter = self._splitter = None  # plain answer from here on
                if chunk is None:
                    continue
            emit(chunk)
            if parser.done:
                return True
        return False

    def end(self, done: bool, *, finish: bool = True) -> None:
        """The body ended (``done``: at the terminal event): apply the end rules, then
        complete (unless not ``finish``)."""
        if not done:
            tail = self.decoder.close()
            done = bool(tail) and self.handle(tail)
            if not done:
                self._parser.end(self._saw_finish)
        if self._pairing is not None:
            held = self._pairing.flush()
            if held is not None:
                self._call.emit(held)
        if self._splitter is not None:
            reasoning, answer = self._splitter.flush()
            if reasoning or answer:
                self._call.emit(ChatChunk(text=answer or None, reasoning=reasoning or None))
        if finish:
            self._call.finish()

    def _count_arguments(self, chunk: ChatChunk) -> None:
        cap = self._max_arguments
        assert cap is not None
        self._arguments += sum(len(d.arguments) for d in chunk.tool_calls if d.arguments)
        if self._arguments > cap:
            raise ResponseTooLargeError("tool_arguments", cap)

    def _paired(self, chunk: ChatChunk) -> ChatChunk:
        if self._pairing is None:
            self._pairing = SurrogatePairing()
        return self._pairing.pair(chunk)


def _split_think(splitter: ThinkTagSplitter, chunk: ChatChunk) -> ChatChunk | None:
    text = chunk.text or ""
    reasoning, answer = splitter.feed(text)
    if not reasoning and answer == text:
        return chunk
    if reasoning and chunk.reasoning:
        reasoning = chunk.reasoning + reasoning
    split = chunk._replace(text=answer or None, reasoning=reasoning or chunk.reasoning)
    return None if split == _EMPTY_CHUNK else split
