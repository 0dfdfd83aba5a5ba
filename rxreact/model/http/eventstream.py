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

    __slots__ = ("_buffer", "_max_frame")

    def __init__(self, max_frame: int | None = None) -> None:
        """``max_frame``: the largest frame accepted, in bytes (at most AWS's 16 MiB); a larger
        one raises :class:`~rxreact.errors.ResponseTooLargeError` as soon as its length is
        read."""
        self._buffer = bytearray()
        self._max_frame = _MAX_FRAME if max_frame is None else min(max_frame, _MAX_FRAME)

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Decode the next piece of the stream; return the messages it completed, in order."""
        buffer = self._buffer
        buffer += data
        events: list[SSEEvent] = []
        start = 0
        size = len(buffer)
        while size - start >= 12:
            total, headers_length, prelude_crc = _PRELUDE.unpack_from(buffer, start)
            if zlib.crc32(buffer[start : start + 8]) != prelude_crc:
                raise StreamProtocolError("event stream: a frame's prelude CRC does not match")
            if total < _MIN_FRAME or headers_length > total - _MIN_FRAME:
                raise StreamProtocolError(f"event stream: a frame of impossible length {total}")
            if total > self._max_frame:
                raise ResponseTooLargeError("sse_line", self._max_frame)
            if size - start < total:
                break
            end = start + total
            (message_crc,) = _CRC.unpack_from(buffer, end - 4)
            if zlib.crc32(buffer[start : end - 4]) != message_crc:
                raise StreamProtocolError("event stream: a frame's message CRC does not match")
            headers = _headers(bytes(buffer[start + 12 : start + 12 + headers_length]))
            payload = bytes(buffer[start + 12 + headers_length : end - 4])
            events.append(_event(headers, payload))
            start = end
        if start:
            del buffer[:start]
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


def _event(headers: Mapping[str, object], payload: bytes) -> SSEEvent:
    kind = headers.get(":message-type", "event")
    text = payload.decode("utf-8", "replace")
    if kind == "event":
        return SSEEvent(text, str(headers.get(":event-type", "")))
    if kind == "exception":
        return SSEEvent(text, f"exception:{headers.get(':exception-type', '')}")
    message = headers.get(":error-message", text)
    return SSEEvent(str(message), f"error:{headers.get(':error-code', '')}")


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
