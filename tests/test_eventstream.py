"""AWS's binary event stream (rxreact.model.http.eventstream): frames in any split decode to
the same events, both CRCs are checked, a frame past the cap is refused as soon as its length
is read, and the message types map onto (event, data) as the Converse parser reads them."""

from __future__ import annotations

import itertools
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxreact.errors import ResponseTooLargeError, StreamProtocolError
from rxreact.model.http.eventstream import EventStreamDecoder, encode_frame


def event(kind: str, payload: str) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, payload.encode())


STREAM = b"".join(
    [
        event("messageStart", '{"role":"assistant"}'),
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"Grüß dich"}}'),
        event("messageStop", '{"stopReason":"end_turn"}'),
    ]
)


def decode_all(pieces: list[bytes]) -> list[tuple[str | None, str]]:
    decoder = EventStreamDecoder()
    out = [(e.event, e.data) for piece in pieces for e in decoder.feed(piece)]
    return out + [(e.event, e.data) for e in decoder.close()]


def test_whole_frames_decode_to_their_event_types_and_payloads() -> None:
    assert decode_all([STREAM]) == [
        ("messageStart", '{"role":"assistant"}'),
        ("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"Grüß dich"}}'),
        ("messageStop", '{"stopReason":"end_turn"}'),
    ]


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_bytes_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(STREAM)]
    pieces = [STREAM[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_all(pieces) == decode_all([STREAM])


def test_exception_and_error_messages_are_named_for_the_parser() -> None:
    exception = encode_frame(
        {":message-type": "exception", ":exception-type": "throttlingException"},
        b'{"message":"slow down"}',
    )
    error = encode_frame(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"}, b""
    )
    assert decode_all([exception + error]) == [
        ("exception:throttlingException", '{"message":"slow down"}'),
        ("error:InternalFailure", "boom"),
    ]


def test_a_corrupt_payload_fails_the_message_crc() -> None:
    frame = bytearray(event("contentBlockDelta", '{"delta":{"text":"hello"}}'))
    frame[-8] ^= 0x20  # one bit of the payload
    with pytest.raises(StreamProtocolError, match="message CRC"):
        EventStreamDecoder().feed(bytes(frame))


def test_a_corrupt_length_fails_the_prelude_crc_before_anything_is_buffered() -> None:
    frame = bytearray(event("messageStop", '{"stopReason":"end_turn"}'))
    frame[2] ^= 0x01
    with pytest.raises(StreamProtocolError, match="prelude CRC"):
        EventStreamDecoder().feed(bytes(frame[:12]))


def test_a_frame_past_the_cap_is_refused_from_its_prelude() -> None:
    prelude = struct.pack(">II", 10_000, 0)
    prelude += struct.pack(">I", zlib.crc32(prelude))
    with pytest.raises(ResponseTooLargeError):
        EventStreamDecoder(max_frame=1024).feed(prelude)


def test_headers_that_overrun_their_length_are_a_protocol_error() -> None:
    raw = b"\x05:bad\x07\x00\xff"  # a string value claiming 255 bytes
    prelude = struct.pack(">II", 16 + len(raw), len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw
    frame = body + struct.pack(">I", zlib.crc32(body))
    with pytest.raises(StreamProtocolError, match="headers"):
        EventStreamDecoder().feed(frame)


def test_a_cut_frame_at_the_end_is_dropped_for_the_end_rules_to_judge() -> None:
    decoder = EventStreamDecoder()
    assert decoder.feed(STREAM[:-5])[-1].event == "contentBlockDelta"
    assert decoder.close() == []
