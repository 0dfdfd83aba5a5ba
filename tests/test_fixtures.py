"""Every recorded provider stream in ``tests/fixtures/streams`` assembles to its expectation.

The pipeline is the production one, with no per-file special cases: ``SSEDecoder`` →
``parse_chunk`` (stopping at ``[DONE]``) → ``ResponseAssembler``. Each file is also decoded
from random splits of its bytes, and byte by byte, with the same result.

For a file whose expectation has an ``error``, the stream must end in a
``ProviderStreamError`` carrying the provider's message and error object; what was assembled
before the error must match the other fields; ``usage`` is the one the error chunk carries
(``ProviderStreamError.usage``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES as STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxreact.errors import ProviderStreamError
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ModelResponse
from rxreact.model.http.sse import SSEDecoder, SSEEvent
from rxreact.model.openai.wire import DONE, parse_chunk

_KEYS = {"content", "reasoning", "tool_calls", "finish_reason", "usage", "error"}


def _fixture_params() -> list[Any]:
    # Never skipped: the recordings are part of the repository, a missing one is a failure.
    files = sorted(STREAMS.glob("*.sse"))
    assert files, f"no *.sse files in {STREAMS}"
    return [pytest.param(path, id=path.stem) for path in files]


FIXTURES = _fixture_params()


def expected_for(path: Path) -> dict[str, Any]:
    expected: dict[str, Any] = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    unknown = set(expected) - _KEYS
    assert not unknown, f"{path.name}: expectation keys this test does not check: {unknown}"
    return expected


def events_of(pieces: Iterable[bytes]) -> Iterator[SSEEvent]:
    decoder = SSEDecoder()
    for piece in pieces:
        yield from decoder.feed(piece)
    yield from decoder.close()


def run(pieces: Iterable[bytes]) -> tuple[ModelResponse, ProviderStreamError | None]:
    """Decode, parse and assemble; return the response so far and the provider error, if any."""
    assembler = ResponseAssembler()
    try:
        for event in events_of(pieces):
            if event.data == DONE:
                break
            chunk = parse_chunk(event.data, event.event)
            if chunk is not None:
                assembler.add(chunk)
    except ProviderStreamError as error:
        return assembler.response(), error
    return assembler.response(), None


def as_expected(response: ModelResponse) -> dict[str, Any]:
    """The response in the fixture files' format."""
    return {
        "content": response.content,
        "reasoning": response.reasoning,
        "tool_calls": [call.model_dump() for call in response.tool_calls],
        "finish_reason": response.finish_reason,
        # exclude_unset: the provider's usage object exactly, extras included, no added nulls.
        "usage": None if response.usage is None else response.usage.model_dump(exclude_unset=True),
    }


def check(path: Path, pieces: Iterable[bytes]) -> None:
    expected = expected_for(path)
    response, error = run(pieces)
    got = as_expected(response)
    if "error" in expected:
        assert error is not None, "the stream must end in a ProviderStreamError"
        assert expected["error"]["message"] in str(error)
        assert error.payload == expected["error"]
        # The usage of a stream that ends in an error rides on the error chunk.
        got["usage"] = None if error.usage is None else error.usage.model_dump(exclude_unset=True)
    else:
        assert error is None, f"unexpected provider error: {error}"
    assert got == {key: expected[key] for key in got}


@pytest.mark.parametrize("path", FIXTURES)
def test_fixture(path: Path) -> None:
    check(path, [path.read_bytes()])


@pytest.mark.parametrize("path", FIXTURES)
def test_fixture_byte_by_byte(path: Path) -> None:
    stream = path.read_bytes()
    check(path, (stream[i : i + 1] for i in range(len(stream))))


@pytest.mark.parametrize("path", FIXTURES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fixture_random_split(path: Path, data: st.DataObject) -> None:
    stream = path.read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40), label="cuts")
    bounds = [0, *sorted(set(cuts)), len(stream)]
    check(path, [stream[a:b] for a, b in pairwise(bounds)])


def test_the_recordings_are_part_of_the_repository() -> None:
    # A plain clone must run every recorded stream: nothing read from outside the repository.
    tests_dir = Path(__file__).resolve().parent
    assert STREAMS.is_relative_to(tests_dir)
    files = sorted(STREAMS.glob("*.sse"))
    assert len(files) == len(FIXTURES) >= 15
    assert all(path.with_name(path.stem + ".expected.json").is_file() for path in files)
