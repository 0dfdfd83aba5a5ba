"""AWS's binary event stream (``application/vnd.amazon.eventstream``), both directions.

Amazon Bedrock's ``converse-stream`` answers with this framing instead of SSE. Each message is
a frame::

    ┌ prelude ───────────────────────────────┐
    total length (u32) · headers length (u32) · prelude CRC32 (u32)
    headers: name length (u8) · name · value type (u8) · value   (repeated)
    payload (total - headers - 16 bytes)
    message CRC32 (u32, of everything before it)

Both CRCs are checked: a frame that fails either is a
:class:`~rxreact.errors.StreamProtocolError` (a corrupt stream is never half-believed). The
decoder gives each message to the wire format as an :class:`~rxreact.model.http.sse.SSEEvent`,
so the transport's read loop stays the one every format shares: the ``data`` is the payload
(JSON text), the ``event`` names what the headers say it is:

- ``:message-type: event`` → ``event`` is its ``:event-type`` (``contentBlockDelta``...);
- ``:message-type: exception`` → ``"exception:" + :exception-type`` (``throttlingException``);
- ``:message-type: error`` → ``"error:" + :error-code``, the data its ``:error-message``.

:func:`encode_frame` writes a frame (the loopback mock speaks Bedrock with it).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping

from rxreact.errors import ResponseTooLargeError, StreamProtocolError
from rxreact.model.http.sse import SSEEvent

__all__ = ["EventStreamDecoder", "encode_frame"]

_PRELUDE = struct.Struct(">III")
_CRC = struct.Struct(">I")
_MIN_FRAME = 16  # prelude (12) + message CRC (4): a frame with no headers and no payload
_MAX_FRAME = 16 * 1024 * 1024
"""The largest frame AWS sends (16 MiB); anything larger is a corrupt length."""
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
"""Value types of a fixed size (bytes): true, false, byte, short, int, long, timestamp, uuid."""
_STRING, _BYTES = 7, 6
_KINDS_CACHED = 64
"""Distinct header blocks remembered per stream (a stream has a handful)."""


class EventStreamDecoder:
    """Incremental event-stream decoder: feed it bytes, get complete messages as events.

    The same interface as :class:`~rxreact.model.http.sse.SSEDecoder` (``feed``, ``close``),
    so the read loop does not know which framing it reads. One decoder per stream.

    Example::

        decoder = EventStreamDecoder()
        for piece in response.iter_bytes():
            for event in decoder.feed(piece):
                handle(event.event, event.data)
    """

    __slots__ = ("_buffer", "_kinds", "_max_frame")

    def __init__(self, max_frame: int | None = None) -> None:
        """``max_frame``: the largest frame accepted, in bytes (at most AWS's 16 MiB); a larger
        one raises :class:`~rxreact.errors.ResponseTooLargeError` as soon as its length is
        read."""
        self._buffer = bytearray()
        self._kinds: dict[bytes, tuple[str, str | None]] = {}
        self._max_frame = _MAX_FRAME if max_frame is None else min(max_frame, _MAX_FRAME)

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode the next piece of the stream; return the messages it completed, in order."""
        buffer = self._buffer
        if buffer:
            buffer += data
            view = bytes(buffer)
        else:
            view = data  # the usual read: whole frames, nothing pending, no copy
        events: list[SSEEvent] = []
        start = 0
        size = len(view)
        kinds = self._kinds
        crc32, unpack = zlib.crc32, _PRELUDE.unpack_from
        while size - start >= 12:
            total, headers_length, prelude_crc = unpack(view, start)
            if crc32(view[start : start + 8]) != prelude_crc:
                raise StreamProtocolError("event stream: a frame's prelude CRC does not match")
            if total < _MIN_FRAME or headers_length > total - _MIN_FRAME:
                raise StreamProtocolError(f"event stream: a frame of impossible length {total}")
            if total > self._max_frame:
                raise ResponseTooLargeError("sse_line", self._max_frame)
            if size - start < total:
                break
            end = start + total
            if crc32(view[start : end - 4]) != _CRC.unpack_from(view, end - 4)[0]:
                raise StreamProtocolError("event stream: a frame's message CRC does not match")
            raw = view[start + 12 : start + 12 + headers_length]
            # Every delta of a stream has the same headers: decoded once, then looked up.
            kind = kinds.get(raw)
            if kind is None:
                kind = _kind(_headers(raw))
                if len(kinds) < _KINDS_CACHED:
                    kinds[raw] = kind
            payload = view[start + 12 + headers_length : end - 4].decode("utf-8", "replace")
            events.append(_event(kind, payload))
            start = end
        if start < size:
            tail = view[start:]
            if buffer:
                del buffer[:start]
            else:
                buffer += tail
        else:
            buffer.clear()
        return events

    def close(self) -> list[SSEEvent]:
        """The end of the stream: nothing is pending in a whole stream (a cut frame is dropped,
        and the wire format's end rules say what the cut means)."""
        self._buffer.clear()
        return []


def _headers(raw: bytes) -> dict[str, object]:
    headers: dict[str, object] = {}
    at, size = 0, len(raw)
    try:
        while at < size:
            length = raw[at]
            name = raw[at + 1 : at + 1 + length].decode()
            at += 1 + length
            kind = raw[at]
            at += 1
            if kind in (_STRING, _BYTES):
                (value_length,) = struct.unpack_from(">H", raw, at)
                value = raw[at + 2 : at + 2 + value_length]
                if len(value) != value_length:
                    raise ValueError("a header value runs past the headers")
                headers[name] = value.decode() if kind == _STRING else value
                at += 2 + value_length
            elif kind in _FIXED:
                width = _FIXED[kind]
                headers[name] = kind == 0 if width == 0 else raw[at : at + width]
                at += width
            else:
                raise ValueError(f"unknown header value type {kind}")
    except (IndexError, ValueError, struct.error, UnicodeDecodeError) as exc:
        raise StreamProtocolError(f"event stream: unreadable frame headers ({exc})") from None
    if at != size:
        raise StreamProtocolError("event stream: frame headers overrun their length")
    return headers


def _kind(headers: Mapping[str, object]) -> tuple[str, str | None]:
    """``(event, message)`` of a frame's headers: the ``event`` name the parser reads, and for
    an error message its ``:error-message`` (which stands in for the payload)."""
    kind = headers.get(":message-type", "event")
    if kind == "event":
        return str(headers.get(":event-type", "")), None
    if kind == "exception":
        return f"exception:{headers.get(':exception-type', '')}", None
    message = headers.get(":error-message")
    return f"error:{headers.get(':error-code', '')}", None if message is None else str(message)


def _event(kind: tuple[str, str | None], payload: str) -> SSEEvent:
    name, message = kind
    # tuple.__new__ skips the NamedTuple's Python-level __new__ (as the SSE decoder does).
    return tuple.__new__(SSEEvent, (payload if message is None else message, name, None))


def encode_frame(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream frame with string-valued ``headers`` and ``payload``."""
    pieces = []
    for name, value in headers.items():
        name_bytes, value_bytes = name.encode(), value.encode()
        pieces.append(struct.pack(">B", len(name_bytes)) + name_bytes)
        pieces.append(struct.pack(">BH", _STRING, len(value_bytes)) + value_bytes)
    raw = b"".join(pieces)
    total = 16 + len(raw) + len(payload)
    prelude = struct.pack(">II", total, len(raw))
    prelude += _CRC.pack(zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + _CRC.pack(zlib.crc32(body))
