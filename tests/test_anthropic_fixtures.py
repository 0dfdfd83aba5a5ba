"""Every recorded Anthropic Messages stream in ``tests/fixtures/streams-anthropic`` assembles to
its expectation, through the production pipeline: ``SSEDecoder`` → ``MessagesStreamParser``
(until ``message_stop``) → ``ResponseAssembler``; also from random splits of its bytes and
byte by byte.

An expectation's ``usage`` is Anthropic's own (merged from ``message_start`` and every
``message_delta``); it is compared as :class:`~rxreact.messages.Usage` counts: every input
token (uncached, cache writes, cache reads) in ``prompt_tokens``, the cache counts as extras.
An expectation with an ``error`` must end in a ``ProviderStreamError`` with that type and
message, carrying the usage so far.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxreact.errors import ProviderStreamError
from rxreact.model.anthropic.wire import MessagesStreamParser
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ModelResponse
from rxreact.model.http.sse import SSEDecoder

STREAMS = FIXTURES.parent / "streams-anthropic"
_KEYS = {"text", "reasoning", "reasoning_replay", "tool_calls", "stop_reason", "usage", "error"}
FILES = sorted(STREAMS.glob("*.sse"))
PARAMS = [pytest.param(path, id=path.stem) for path in FILES]


def test_the_recordings_are_there() -> None:
    assert len(FILES) == 11  # never skipped: a missing recording is a failure


def expected_for(path: Path) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    assert set(expected) <= _KEYS, f"{path.name}: unchecked keys {set(expected) - _KEYS}"
    return expected


def run(pieces: Iterable[bytes]) -> tuple[ModelResponse, ProviderStreamError | None, bool]:
    """Decode, parse, assemble: the response so far, the provider error, whether it ended."""
    decoder, parser, assembler = SSEDecoder(), MessagesStreamParser(), ResponseAssembler()
    try:
        for piece in [*pieces, None]:
            events = decoder.feed(piece) if piece is not None else decoder.close()
            for event in events:
                chunk = parser.parse(event.data, event.event)
                if chunk is not None:
                    assembler.add(chunk)
                if parser.done:
                    return assembler.response(), None, True
    except ProviderStreamError as error:
        return assembler.response(), error, False
    return assembler.response(), None, False


def counts(raw: dict[str, Any]) -> dict[str, Any]:
    """Anthropic's usage as the counts rxreact reports (independently of the parser's code)."""
    cache = {
        k: raw[k] for k in ("cache_creation_input_tokens", "cache_read_input_tokens") if k in raw
    }
    prompt = raw["input_tokens"] + sum(cache.values())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": raw["output_tokens"],
        "total_tokens": prompt + raw["output_tokens"],
        **cache,
    }


def check(path: Path, pieces: Iterable[bytes]) -> None:
    expected = expected_for(path)
    response, error, ended = run(pieces)
    assert response.content == expected["text"]
    assert response.reasoning == expected["reasoning"]
    assert [item.provider for item in response.replay] == ["anthropic"] * len(response.replay)
    assert [item.data for item in response.replay] == expected["reasoning_replay"]
    assert [call.model_dump() for call in response.tool_calls] == expected["tool_calls"]
    assert response.provider_finish_reason == expected["stop_reason"]
    if "error" in expected:
        assert error is not None and not ended
        assert (error.error_type, error.provider_message) == (
            expected["error"]["type"],
            expected["error"]["message"],
        )
        assert error.usage is not None
        assert error.usage.model_dump(exclude_none=True) == counts(expected["usage"])
    else:
        assert error is None and ended
        assert response.usage is not None
        assert response.usage.model_dump(exclude_none=True) == counts(expected["usage"])


@pytest.mark.parametrize("path", PARAMS)
def test_each_recording_assembles_to_its_expectation(path: Path) -> None:
    check(path, [path.read_bytes()])


@pytest.mark.parametrize("path", PARAMS)
def test_each_recording_assembles_the_same_fed_byte_by_byte(path: Path) -> None:
    data = path.read_bytes()
    check(path, [data[i : i + 1] for i in range(len(data))])


@pytest.mark.parametrize("path", PARAMS)
@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=40))
def test_each_recording_assembles_the_same_from_random_pieces(path: Path, cuts: list[int]) -> None:
    data = path.read_bytes()
    bounds = [0, *sorted(c % (len(data) + 1) for c in cuts), len(data)]
    check(path, [data[a:b] for a, b in pairwise(bounds)])


def test_finish_reasons_are_ours_with_the_raw_value_kept() -> None:
    finishes = {}
    for path in FILES:
        response, _, _ = run([path.read_bytes()])
        finishes[path.stem] = (response.finish_reason, response.provider_finish_reason)
    assert finishes["text-with-ping"] == ("stop", "end_turn")
    assert finishes["parallel-three-tools"] == ("tool_calls", "tool_use")
    assert finishes["cache-read-max-tokens"] == ("length", "max_tokens")
    assert finishes["refusal-stop-details"] == ("content_filter", "refusal")
    assert finishes["overloaded-error-mid-stream"] == (None, None)
