"""The SSE read loop of a streamed response: bytes → events → chunks, and the end rules.

Per chunk, the loop does one :func:`~rxreact.model.wire.parse_chunk` and one ``emit``; the
SSE decoder and the watchdog's clock work per read (one read often carries many events), and
``<think>`` splitting costs one call per text chunk only until the text is known to be plain
answer. No ``iter_lines``: the decoder splits whole byte buffers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx

from rxreact.errors import StreamInterruptedError
from rxreact.model._call import ModelCall
from rxreact.model.chunks import ChatChunk
from rxreact.model.sse import SSEDecoder, SSEEvent
from rxreact.model.think import ThinkTagSplitter
from rxreact.model.wire import DONE, parse_chunk

__all__ = ["read_sse"]

_DRAIN_LIMIT = 1 << 16
"""Bytes read after ``[DONE]`` to reach the end of the body, so the connection can be reused."""
_EMPTY_CHUNK = ChatChunk()


def read_sse(response: httpx.Response, call: ModelCall[ChatChunk], think_tags: bool) -> None:
    """Emit the chunks of an SSE response body until ``[DONE]`` or the end of the body.

    ``[DONE]`` ends the stream, with or without a finish reason; so does the end of the body
    after a finish reason (a cut after it loses nothing). The end of the body without either
    raises :class:`StreamInterruptedError`. A connection broken mid-body is such an end.
    Provider errors raised by :func:`~rxreact.model.wire.parse_chunk` propagate as they are.
    """
    decoder = SSEDecoder()
    feed = decoder.feed
    emit = call.emit
    splitter = ThinkTagSplitter() if think_tags else None
    saw_finish = False

    def handle(events: list[SSEEvent]) -> bool:
        """Emit what the events carry; True at ``[DONE]``."""
        nonlocal saw_finish, splitter
        call.busy = True
        for event in events:
            data = event.data
            if data == DONE:
                return True
            chunk = parse_chunk(data, event.event)
            if chunk is None:
                continue
            if chunk.finish_reason is not None:
                saw_finish = True
            if splitter is not None and chunk.text:
                chunk = _split_think(splitter, chunk)
                if splitter.passing_through:
                    splitter = None  # plain answer from here on: no call per chunk
                if chunk is None:
                    continue
            emit(chunk)
        call.batch_read()
        return False

    pieces = (
        response.iter_bytes() if "content-encoding" in response.headers else response.iter_raw()
    )
    done = False
    try:
        for piece in pieces:
            events = feed(piece)
            if events and handle(events):
                done = True
                break
    except (httpx.RemoteProtocolError, httpx.ReadError):
        pass  # a broken connection is an end of the body: the rules below decide
    if not done:
        tail = decoder.close()
        done = bool(tail) and handle(tail)
        if not done and not saw_finish:
            raise StreamInterruptedError(
                "the stream ended without [DONE] and without a finish_reason"
            )
    if splitter is not None:
        reasoning, answer = splitter.flush()
        if reasoning or answer:
            emit(ChatChunk(text=answer or None, reasoning=reasoning or None))
    call.finish()
    _drain(pieces)


def _split_think(splitter: ThinkTagSplitter, chunk: ChatChunk) -> ChatChunk | None:
    text = chunk.text or ""
    reasoning, answer = splitter.feed(text)
    if not reasoning and answer == text:
        return chunk
    if reasoning and chunk.reasoning:
        reasoning = chunk.reasoning + reasoning
    split = chunk._replace(text=answer or None, reasoning=reasoning or chunk.reasoning)
    return None if split == _EMPTY_CHUNK else split


def _drain(pieces: Iterator[bytes]) -> None:
    """Read the end of the body (after ``[DONE]``) so httpx can reuse the connection."""
    read = 0
    with contextlib.suppress(httpx.HTTPError):
        for piece in pieces:
            read += len(piece)
            if read > _DRAIN_LIMIT:
                return
