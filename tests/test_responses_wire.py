"""The Responses API stream parser and whole-response parser (responses_wire).

Every recording in ``tests/fixtures/streams-responses`` assembles to its ``.expected.json``
through the production pipeline (``SSEDecoder`` → ``ResponsesParser`` → ``ResponseAssembler``),
whole, byte by byte, and split at random; the other tests are the protocol's rules one by one,
written as the events a server may send.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxreact.errors import ProviderStreamError, StreamProtocolError
from rxreact.model.assembly import ResponseAssembler, assemble
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.http.surrogates import SurrogateChunk
from rxreact.model.openai.responses_wire import (
    PROVIDER,
    ResponsesParser,
    parse_response,
    responses_usage,
)

PHASES = re.compile(
    r'"type":"response\.output_item\.done".*"type":"message".*"phase":"(?P<phase>\w+)"'
)
"""A finished message item that carries a phase (in these recordings, one per line)."""
STREAMS = Path(__file__).resolve().parent / "fixtures" / "streams-responses"
FILES = sorted(STREAMS.glob("*.sse"))
USAGE_NAMES = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "input_tokens_details": "prompt_tokens_details",
    "output_tokens_details": "completion_tokens_details",
}


def run(pieces: Iterable[bytes]) -> tuple[ModelResponse, ProviderStreamError | None, bool]:
    """Decode, parse and assemble as the transport does: (response, error, reached the end)."""
    decoder, parser, assembler = SSEDecoder(), ResponsesParser(), ResponseAssembler()
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
        return assembler.response(), error, parser.done
    return assembler.response(), None, False


def check(path: Path, pieces: Iterable[bytes]) -> None:
    expected = json.loads(path.with_name(path.stem + ".expected.json").read_text())
    response, error, done = run(pieces)
    assert done, "every recording ends in a terminal event (an error counts)"
    assert response.content == expected["text"]
    assert response.reasoning == expected["reasoning"]
    assert [c.model_dump() for c in response.tool_calls] == expected["tool_calls"]
    assert all(item.provider == PROVIDER for item in response.replay)
    reasoning = [item.data for item in response.replay if item.data["type"] == "reasoning"]
    replay = [{k: data.get(k) for k in ("type", "id", "encrypted_content")} for data in reasoning]
    assert replay == expected["reasoning_replay"]
    phases = [item.data["phase"] for item in response.replay if item.data["type"] == "message"]
    assert phases == PHASES.findall(path.read_text())
    if "error" in expected:
        assert error is not None, "the stream must end in a ProviderStreamError"
        assert error.payload == expected["error"]
        assert expected["error"]["message"] in str(error)
        assert response.finish_reason is None
        return
    assert error is None
    assert response.provider_finish_reason == expected["stop_reason"]
    assert response.finish_reason == ("tool_calls" if expected["tool_calls"] else "stop")
    usage = {USAGE_NAMES.get(k, k): v for k, v in expected["usage"].items()}
    assert response.usage is not None
    assert response.usage.model_dump(exclude_unset=True) == usage


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture(path: Path) -> None:
    check(path, [path.read_bytes()])


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture_byte_by_byte(path: Path) -> None:
    data = path.read_bytes()
    check(path, (data[i : i + 1] for i in range(len(data))))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fixture_random_split(path: Path, data: st.DataObject) -> None:
    stream = path.read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=40), label="cuts")
    bounds = [0, *sorted(set(cuts)), len(stream)]
    check(path, [stream[a:b] for a, b in pairwise(bounds)])


def test_the_recordings_are_part_of_the_repository() -> None:
    assert len(FILES) == 10
    assert all(p.with_name(p.stem + ".expected.json").is_file() for p in FILES)


# -- the protocol's rules ----------------------------------------------------------------------


def feed(*events: dict[str, Any]) -> tuple[list[ChatChunk], ResponsesParser]:
    parser = ResponsesParser()
    chunks = [parser.parse(json.dumps(e), None) for e in events]
    return [c for c in chunks if c is not None], parser


def completed(**response: Any) -> dict[str, Any]:
    return {"type": "response.completed", "response": {"status": "completed", **response}}


def call_added(index: int, item_id: str, call_id: str, name: str) -> dict[str, Any]:
    item = {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
    return {
        "type": "response.output_item.added",
        "output_index": index,
        "item": {**item, "arguments": ""},
    }


def test_state_is_keyed_on_output_index_even_when_item_ids_change() -> None:
    chunks, parser = feed(
        call_added(0, "fc_a", "call_1", "f"),
        call_added(1, "fc_b", "call_2", "g"),
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "x",
            "delta": '{"b"',
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "y",
            "delta": "{}",
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 1,
            "item_id": "z",
            "delta": ":1}",
        },
        completed(),
    )
    response = assemble(chunks)
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_1", "f", "{}"),
        ("call_2", "g", '{"b":1}'),
    ]
    assert (response.finish_reason, parser.done) == ("tool_calls", True)


def test_what_a_server_puts_only_in_the_finished_item_is_emitted_once() -> None:
    message = {
        "type": "message",
        "id": "m",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "Hi."}],
    }
    call = {
        "type": "function_call",
        "id": "fc",
        "call_id": "call_9",
        "name": "f",
        "arguments": '{"a":1}',
    }
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Think."}],
    }
    chunks, _ = feed(
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 1, "item": message},
        call_added(2, "fc", "call_9", "f"),
        {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '{"a"'},
        {"type": "response.output_item.done", "output_index": 2, "item": call},
        {
            "type": "response.output_item.done",
            "output_index": 3,
            "item": {**call, "call_id": "call_10"},
        },
        completed(),
    )
    response = assemble(chunks)
    assert (response.content, response.reasoning) == ("Hi.", "Think.")
    assert [(c.id, c.arguments) for c in response.tool_calls] == [
        ("call_9", '{"a":1}'),
        ("call_10", '{"a":1}'),
    ]


def test_a_message_phase_is_kept_for_the_next_request() -> None:
    message = {
        "type": "message",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "Let me look."}],
    }
    chunks, _ = feed(
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Let me look."},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        completed(),
    )
    response = assemble(chunks)
    assert response.content == "Let me look."  # commentary is still answer text
    assert [r.data for r in response.replay] == [{"type": "message", "phase": "commentary"}]


def test_a_call_announced_without_its_call_id_gets_it_from_the_finished_item() -> None:
    added = call_added(0, "fc_1", "call_1", "f")
    del added["item"]["call_id"]
    done = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "f",
        "arguments": "{}",
    }
    chunks, _ = feed(
        added,
        {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        completed(),
    )
    assert [(c.id, c.name, c.arguments) for c in assemble(chunks).tool_calls] == [
        ("call_1", "f", "{}")
    ]


def test_streamed_text_is_not_repeated_by_the_finished_item() -> None:
    message = {"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}
    chunks, _ = feed(
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "lo"},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        completed(),
    )
    assert assemble(chunks).content == "Hello"


def test_summary_parts_and_reasoning_items_are_paragraphs_and_plain_reasoning_counts() -> None:
    def delta(index: int, summary: int, text: str) -> dict[str, Any]:
        kind = "response.reasoning_summary_text.delta"
        return {"type": kind, "output_index": index, "summary_index": summary, "delta": text}

    chunks, _ = feed(
        delta(0, 0, "One"),
        delta(0, 0, " two."),
        delta(0, 1, "Three."),
        {
            "type": "response.reasoning_text.delta",
            "output_index": 2,
            "content_index": 0,
            "delta": "Four.",
        },
        completed(),
    )
    assert assemble(chunks).reasoning == "One two.\n\nThree.\n\nFour."


def test_a_reasoning_item_without_summary_or_encrypted_content_is_replayed_by_id() -> None:
    item = {
        "type": "reasoning",
        "id": "rs_9",
        "summary": [],
        "encrypted_content": None,
        "status": "completed",
    }
    chunks, _ = feed(
        {"type": "response.output_item.done", "output_index": 0, "item": item}, completed()
    )
    response = assemble(chunks)
    assert response.reasoning is None
    assert [(r.provider, r.data) for r in response.replay] == [
        (PROVIDER, {"type": "reasoning", "id": "rs_9", "summary": []})
    ]


@pytest.mark.parametrize(
    ("reason", "finish"),
    [("max_output_tokens", "length"), ("content_filter", "content_filter"), (None, "length")],
)
def test_an_incomplete_response_ends_with_length_or_content_filter(
    reason: str | None, finish: str
) -> None:
    details = None if reason is None else {"reason": reason}
    chunks, parser = feed(
        {"type": "response.output_text.delta", "output_index": 0, "delta": "Half"},
        {
            "type": "response.incomplete",
            "response": {"status": "incomplete", "incomplete_details": details},
        },
    )
    response = assemble(chunks)
    assert (response.content, response.finish_reason, parser.done) == ("Half", finish, True)
    assert response.provider_finish_reason == (reason or "incomplete")


def test_failed_and_error_events_are_typed_errors_retryable_when_the_service_failed() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            "status": "failed",
            "error": {"code": "server_error", "message": "boom"},
            "usage": {"input_tokens": 3, "output_tokens": 0, "total_tokens": 3},
        },
    }
    with pytest.raises(ProviderStreamError) as caught:
        feed(failed)
    assert (caught.value.code, caught.value.retryable) == ("server_error", True)
    assert caught.value.usage is not None and caught.value.usage.prompt_tokens == 3

    # The flat shape of the API reference, a code that is the request's fault.
    flat = {
        "type": "error",
        "code": "invalid_prompt",
        "message": "no",
        "param": None,
        "sequence_number": 4,
    }
    with pytest.raises(ProviderStreamError) as caught:
        feed(flat)
    assert (caught.value.code, caught.value.retryable) == ("invalid_prompt", False)
    assert caught.value.payload == {"code": "invalid_prompt", "message": "no", "param": None}

    # A JSON error body where a stream was asked for (read as one event, no type).
    with pytest.raises(ProviderStreamError, match="slow down"):
        feed(
            {
                "error": {
                    "message": "slow down",
                    "type": "rate_limit_error",
                    "code": "rate_limit_exceeded",
                }
            }
        )


def test_unknown_events_are_skipped_and_bad_shapes_are_protocol_errors() -> None:
    chunks, parser = feed(
        {"type": "response.created", "response": {"status": "in_progress"}},
        {"type": "response.queued", "response": {"status": "queued"}},
        {"type": "response.web_search_call.searching", "output_index": 0},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "web_search_call"},
        },
        {"type": "response.something_new", "delta": 1},
    )
    assert (chunks, parser.done) == ([], False)
    with pytest.raises(StreamProtocolError):
        ResponsesParser().parse("[1, 2]", None)
    with pytest.raises(StreamProtocolError):
        ResponsesParser().parse('{"type": "response.output_text.delta", "delta": 5}', None)
    with pytest.raises(StreamProtocolError):
        ResponsesParser().parse("{not json", None)


def test_a_lone_surrogate_escape_is_read_for_pairing() -> None:
    data = '{"type":"response.output_text.delta","output_index":0,"delta":"\\ud83d"}'
    chunk = ResponsesParser().parse(data, None)
    assert type(chunk) is SurrogateChunk and chunk.text == "\ud83d"


def test_usage_is_named_as_rxreact_names_it() -> None:
    usage = responses_usage(
        {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 5},
            "total_tokens": 17,
        }
    )
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (10, 7, 17)
    extra = usage.model_dump(exclude_unset=True)
    assert extra["prompt_tokens_details"] == {"cached_tokens": 4}
    assert extra["completion_tokens_details"] == {"reasoning_tokens": 5}


def test_a_whole_response_equals_the_assembled_stream() -> None:
    path = STREAMS / "reasoning-summary-encrypted-call.sse"
    streamed, _, _ = run([path.read_bytes()])
    last = [line for line in path.read_text().splitlines() if line.startswith("data: ")][-1]
    whole = json.loads(last[6:])["response"]
    parsed = parse_response(json.dumps(whole).encode())
    # The terminal event's copy of the item carries yet another encryption: compare the rest.
    assert parsed.model_dump(exclude={"replay"}) == streamed.model_dump(exclude={"replay"})
    assert [r.data["id"] for r in parsed.replay] == [r.data["id"] for r in streamed.replay]


def test_a_whole_response_that_failed_or_is_not_finished() -> None:
    with pytest.raises(ProviderStreamError, match="quota"):
        parse_response(
            {
                "status": "failed",
                "output": [],
                "error": {"code": "insufficient_quota", "message": "quota"},
            }
        )
    with pytest.raises(StreamProtocolError, match="queued"):
        parse_response({"status": "queued", "output": []})
    with pytest.raises(ProviderStreamError, match="bad"):
        parse_response(b'{"error": {"message": "bad", "type": "invalid_request_error"}}')
    incomplete = {
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Half"}]}],
    }
    assert parse_response(incomplete).finish_reason == "length"
