"""Tests of rxreact.model.http.sse: WHATWG event-stream rules, and any split of the bytes."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxreact.model.http.sse import SSEDecoder, SSEEvent


def decode(*pieces: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for piece in pieces:
        events += decoder.feed(piece)
    return events + decoder.close()


def decode_split(stream: bytes, cuts: Sequence[int]) -> list[SSEEvent]:
    bounds = [0, *sorted(set(cuts)), len(stream)]
    return decode(*(stream[a:b] for a, b in itertools.pairwise(bounds)))


def test_single_event() -> None:
    assert decode(b'data: {"a":1}\n\n') == [SSEEvent('{"a":1}')]


def test_events_in_order_from_one_read() -> None:
    assert decode(b"data: a\n\ndata: b\n\ndata: [DONE]\n\n") == [
        SSEEvent("a"),
        SSEEvent("b"),
        SSEEvent("[DONE]"),
    ]


def test_feed_returns_events_as_soon_as_they_are_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n") == []
    assert decoder.feed(b"\ndata: b") == [SSEEvent("a")]
    assert decoder.feed(b"\n\n") == [SSEEvent("b")]
    assert decoder.close() == []


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_line_endings(newline: bytes) -> None:
    stream = b"event: x" + newline + b"data: a" + newline + b"data: b" + newline + newline
    assert decode(stream) == [SSEEvent("a\nb", event="x")]


def test_crlf_split_between_reads_is_one_line_ending() -> None:
    # Were the LF taken as a second line ending, the blank line would dispatch "a" alone.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [SSEEvent("a\nb")]


def test_cr_then_cr_across_reads_is_two_line_endings() -> None:
    assert decode(b"data: a\r", b"\rdata: b\r\r") == [SSEEvent("a"), SSEEvent("b")]


def test_lone_cr_at_end_then_data() -> None:
    assert decode(b"data: a\r", b"data: b\r\r") == [SSEEvent("a\nb")]


def test_comments_are_ignored_anywhere() -> None:
    stream = b": OPENROUTER PROCESSING\n\ndata: a\n: inside\ndata: b\n\n:\n\n"
    assert decode(stream) == [SSEEvent("a\nb")]


def test_data_with_and_without_the_leading_space() -> None:
    assert decode(b"data:a\n\ndata: b\n\ndata:  c\n\n") == [
        SSEEvent("a"),
        SSEEvent("b"),
        SSEEvent(" c"),  # only one space is dropped
    ]


def test_data_colons_in_value_are_kept() -> None:
    assert decode(b'data: {"url":"http://x"}\n\n') == [SSEEvent('{"url":"http://x"}')]


def test_field_without_colon_has_empty_value() -> None:
    assert decode(b"data\n\n") == [SSEEvent("")]
    assert decode(b"data\ndata\n\n") == [SSEEvent("\n")]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode(b"event: ping\n\nid: 7\n\n: hi\n\n\n\n") == []


def test_event_field_applies_to_its_event_only() -> None:
    stream = b"event: error\ndata: {}\n\ndata: next\n\n"
    assert decode(stream) == [SSEEvent("{}", event="error"), SSEEvent("next")]


def test_event_field_of_a_dataless_event_does_not_leak() -> None:
    assert decode(b"event: ping\n\ndata: a\n\n") == [SSEEvent("a")]


def test_empty_event_name_is_the_default() -> None:
    assert decode(b"event:\ndata: a\n\n") == [SSEEvent("a")]


def test_last_event_id_carries_over() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"
    assert decode(stream) == [SSEEvent("a", id="1"), SSEEvent("b", id="1"), SSEEvent("c", id="")]


def test_id_with_null_is_ignored() -> None:
    assert decode(b"id: 1\n\nid: a\0b\ndata: x\n\n") == [SSEEvent("x", id="1")]


def test_unknown_fields_are_ignored() -> None:
    assert decode(b"retry: 1000\nfoo: bar\ndata: a\n\n") == [SSEEvent("a")]


def test_multibyte_utf8_split_across_reads() -> None:
    stream = "data: 15 × 27 — 你好 🎉\n\n".encode()
    for cut in range(len(stream) + 1):
        assert decode(stream[:cut], stream[cut:]) == [SSEEvent("15 × 27 — 你好 🎉")], cut


def test_invalid_utf8_is_replaced_not_raised() -> None:
    assert decode(b"data: a\xffb\n\n") == [SSEEvent("a\ufffdb")]


def test_bom_at_start_is_ignored() -> None:
    assert decode(b"\xef\xbb\xbfdata: a\n\n") == [SSEEvent("a")]


def test_bom_split_across_reads_is_ignored() -> None:
    assert decode(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [SSEEvent("a")]


def test_bom_later_in_the_stream_is_data() -> None:
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [SSEEvent("a")]


def test_close_dispatches_event_missing_only_the_blank_line() -> None:
    # Our tolerance: servers end with "data: [DONE]\n" and no blank line.
    assert decode(b"data: a\n\ndata: [DONE]\n") == [SSEEvent("a"), SSEEvent("[DONE]")]
    assert decode(b"event: error\ndata: x\ndata: y\r\n") == [SSEEvent("x\ny", event="error")]


def test_close_tolerates_an_unterminated_comment() -> None:
    assert decode(b"data: a\n: bye") == [SSEEvent("a")]


def test_close_discards_event_whose_last_line_is_cut() -> None:
    assert decode(b"data: a\n\ndata: [DO") == [SSEEvent("a")]
    assert decode(b"data: x\ndata: y") == []


def test_close_resets_the_decoder() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 1\ndata: cut") == []
    assert decoder.close() == []
    assert decoder.feed(b"\xef\xbb\xbfdata: new\n\n") == [SSEEvent("new")]


def test_empty_reads_are_harmless() -> None:
    assert decode(b"", b"data: a\n", b"", b"\n", b"") == [SSEEvent("a")]


def test_long_line_in_many_small_reads() -> None:
    payload = b"x" * 100_000
    pieces = [b"data: "] + [payload[i : i + 7] for i in range(0, len(payload), 7)] + [b"\n\n"]
    assert decode(*pieces) == [SSEEvent(payload.decode())]


# --- any split of the byte stream gives the same events ------------------------------------

_LINE_ENDINGS = st.sampled_from([b"\n", b"\r\n", b"\r"])
_VALUES = st.text(
    alphabet=st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]),
    max_size=12,
)


@st.composite
def _streams(draw: st.DrawFn) -> bytes:
    """A random event stream with mixed line endings, comments, fields and multi-byte text."""
    parts: list[bytes] = []
    if draw(st.booleans()):
        parts.append(b"\xef\xbb\xbf")
    for _ in range(draw(st.integers(0, 6))):
        lines = draw(
            st.lists(
                st.one_of(
                    _VALUES.map(lambda v: b"data: " + v.encode()),
                    _VALUES.map(lambda v: b"data:" + v.encode()),
                    _VALUES.map(lambda v: b":" + v.encode()),
                    _VALUES.map(lambda v: b"event: " + v.encode()),
                    _VALUES.map(lambda v: b"id: " + v.encode()),
                    st.just(b"data"),
                ),
                max_size=4,
            )
        )
        for line in lines:
            parts.append(line + draw(_LINE_ENDINGS))
        parts.append(draw(_LINE_ENDINGS))
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from([b"data: tail\n", b"data: cut", b": c"])))
    return b"".join(parts)


@given(stream=_streams(), data=st.data())
def test_any_split_gives_the_same_events(stream: bytes, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12))
    assert decode_split(stream, cuts) == decode(stream)


@given(stream=_streams())
def test_byte_by_byte_gives_the_same_events(stream: bytes) -> None:
    assert decode(*(stream[i : i + 1] for i in range(len(stream)))) == decode(stream)


@given(values=st.lists(_VALUES, min_size=1, max_size=5), newline=_LINE_ENDINGS, data=st.data())
def test_data_round_trips(values: list[str], newline: bytes, data: st.DataObject) -> None:
    stream = b"".join(b"data: " + v.encode() + newline + newline for v in values)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    assert [e.data for e in decode_split(stream, cuts)] == values


# --- the line limit (issue 11, item 6) -------------------------------------------------------


def test_a_line_past_the_limit_raises_as_soon_as_it_is_read() -> None:
    from rxreact.errors import ResponseTooLargeError

    decoder = SSEDecoder(max_line=100)
    assert decoder.feed(b"data: " + b"x" * 90 + b"\n\n")  # within the limit
    decoder.feed(b"data: " + b"y" * 60)
    with pytest.raises(ResponseTooLargeError) as caught:
        decoder.feed(b"y" * 60)  # no line end yet: the partial line alone passes the limit
    assert (caught.value.what, caught.value.limit) == ("sse_line", 100)
    with pytest.raises(ResponseTooLargeError):
        SSEDecoder(max_line=100).feed(b"data: " + b"z" * 200 + b"\n\n")
    with pytest.raises(ResponseTooLargeError):
        SSEDecoder(max_line=100).feed(b"data: a\n\ndata: " + b"z" * 200 + b"\ndata: b\n\n")
