"""Tests of rxreact.model.openai.wire: chunk and completion normalization, error mapping."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxreact.errors import ProviderStreamError, StreamProtocolError
from rxreact.messages import ToolCall, Usage
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.openai.wire import DONE, parse_chunk, parse_completion


def chunk(delta: dict[str, Any] | None = None, **choice: Any) -> str:
    """A chat.completion.chunk with one choice; top-level keys via ``top``."""
    top = choice.pop("top", {})
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": None, **choice}],
        **top,
    }
    return json.dumps(body)


def test_done_constant() -> None:
    assert DONE == "[DONE]"


# --- text, role, finish_reason -------------------------------------------------------------


def test_text_delta() -> None:
    assert parse_chunk(chunk({"content": "Hi"})) == ChatChunk(text="Hi")


def test_bytes_data() -> None:
    assert parse_chunk(chunk({"content": "你好"}).encode()) == ChatChunk(text="你好")


def test_role_and_empty_content_are_kept() -> None:
    assert parse_chunk(chunk({"role": "assistant", "content": ""})) == ChatChunk(
        text="", role="assistant"
    )


def test_finish_reason() -> None:
    assert parse_chunk(chunk({}, finish_reason="stop")) == ChatChunk(finish_reason="stop")


def test_empty_finish_reason_is_none() -> None:
    assert parse_chunk(chunk({"content": "x"}, finish_reason="")) == ChatChunk(text="x")


def test_content_parts() -> None:
    parts = [{"type": "text", "text": "2 + "}, {"type": "image_url"}, {"type": "text", "text": "2"}]
    assert parse_chunk(chunk({"content": parts})) == ChatChunk(text="2 + 2")


def test_thinking_parts_are_reasoning() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "Hmm"}]},
        {"type": "text", "text": "4"},
    ]
    assert parse_chunk(chunk({"content": parts})) == ChatChunk(text="4", reasoning="Hmm")


def test_thinking_part_as_plain_string() -> None:
    parts = [{"type": "thinking", "thinking": "Hmm"}]
    assert parse_chunk(chunk({"content": parts})) == ChatChunk(reasoning="Hmm")


# --- reasoning fields ----------------------------------------------------------------------


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_fields(key: str) -> None:
    assert parse_chunk(chunk({key: "Let me think"})) == ChatChunk(reasoning="Let me think")


def test_reasoning_details_texts() -> None:
    details = [
        {"type": "reasoning.text", "text": "a"},
        {"type": "reasoning.encrypted", "data": "xyz"},
        {"type": "reasoning.text", "text": "b"},
    ]
    assert parse_chunk(chunk({"reasoning_details": details})) == ChatChunk(reasoning="ab")


def test_reasoning_details_without_text_carry_nothing() -> None:
    details = [{"type": "reasoning.text", "signature": "sig"}]
    assert parse_chunk(chunk({"reasoning_details": details})) is None


def test_same_reasoning_under_several_names_counts_once() -> None:
    delta = {
        "reasoning": "This",
        "reasoning_content": "This",
        "reasoning_details": [{"type": "reasoning.text", "text": "This"}],
    }
    assert parse_chunk(chunk(delta)) == ChatChunk(reasoning="This")


def test_different_reasoning_texts_are_joined() -> None:
    delta = {"reasoning_content": "A", "reasoning": "B"}
    assert parse_chunk(chunk(delta)) == ChatChunk(reasoning="AB")


def test_empty_reasoning_is_kept_as_empty() -> None:
    delta = {"reasoning": None, "reasoning_details": [{"text": ""}], "content": ""}
    assert parse_chunk(chunk(delta)) == ChatChunk(text="", reasoning="")


# --- tool calls ----------------------------------------------------------------------------


def test_tool_call_deltas() -> None:
    delta = {
        "tool_calls": [
            {"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": ""}},
            {"index": 1, "function": {"arguments": '{"x"'}},
        ]
    }
    assert parse_chunk(chunk(delta)) == ChatChunk(
        tool_calls=(ToolCallDelta(0, "a", "f", ""), ToolCallDelta(1, None, None, '{"x"'))
    )


def test_tool_call_empty_strings_are_kept_as_sent() -> None:
    delta = {"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "}"}}]}
    assert parse_chunk(chunk(delta)) == ChatChunk(tool_calls=(ToolCallDelta(0, "", None, "}"),))


def test_tool_call_without_index() -> None:
    delta = {"tool_calls": [{"id": "m1", "function": {"name": "f", "arguments": "{}"}}]}
    assert parse_chunk(chunk(delta)) == ChatChunk(
        tool_calls=(ToolCallDelta(None, "m1", "f", "{}"),)
    )


def test_tool_call_arguments_as_object_are_serialized() -> None:
    delta = {
        "tool_calls": [{"index": 0, "function": {"name": "f", "arguments": {"city": "Zürich"}}}]
    }
    parsed = parse_chunk(chunk(delta))
    assert parsed is not None
    assert parsed.tool_calls == (ToolCallDelta(0, None, "f", '{"city": "Zürich"}'),)


def test_null_tool_calls() -> None:
    assert parse_chunk(chunk({"content": "x", "tool_calls": None})) == ChatChunk(text="x")


# --- choices and usage ---------------------------------------------------------------------


def test_other_choices_are_ignored() -> None:
    data = json.dumps(
        {
            "choices": [
                {"index": 1, "delta": {"content": "other"}},
                {"index": 0, "delta": {"content": "mine"}},
            ]
        }
    )
    assert parse_chunk(data) == ChatChunk(text="mine")


def test_only_other_choices_is_nothing() -> None:
    assert parse_chunk('{"choices": [{"index": 2, "delta": {"content": "x"}}]}') is None


def test_choice_without_index_is_choice_zero() -> None:
    assert parse_chunk('{"choices": [{"delta": {"content": "x"}}]}') == ChatChunk(text="x")


@pytest.mark.parametrize(
    "data",
    [
        '{"choices": [], "prompt_filter_results": [{"prompt_index": 0}]}',
        '{"choices": [], "usage": null, "moderation": {"flagged": false}}',
        '{"choices": [{"index": 0, "delta": {}, "finish_reason": null}]}',
        '{"choices": [{"index": 0, "delta": {"content": null, "refusal": null}}]}',
        "{}",
    ],
)
def test_chunks_carrying_nothing_are_none(data: str) -> None:
    assert parse_chunk(data) is None


def test_usage_only_chunk_keeps_extras() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 3},
        "cost": 0.0001,
    }
    parsed = parse_chunk(json.dumps({"choices": [], "usage": usage}))
    assert parsed is not None
    assert parsed.usage == Usage.model_validate(usage)
    assert parsed.usage is not None
    assert parsed.usage.model_dump() == usage


def test_usage_with_choice() -> None:
    parsed = parse_chunk(chunk({"content": "x"}, top={"usage": {"total_tokens": 3}}))
    assert parsed == ChatChunk(text="x", usage=Usage(total_tokens=3))


# --- provider errors -----------------------------------------------------------------------


def test_error_event() -> None:
    data = json.dumps(
        {
            "error": {
                "message": "Tool call validation failed",
                "type": "invalid_request_error",
                "code": "tool_use_failed",
                "status_code": 400,
            }
        }
    )
    with pytest.raises(ProviderStreamError) as caught:
        parse_chunk(data, event="error")
    error = caught.value
    assert error.provider_message == "Tool call validation failed"
    assert error.code == "tool_use_failed"
    assert error.error_type == "invalid_request_error"
    assert error.payload["status_code"] == 400
    assert "Tool call validation failed" in str(error)


def test_error_event_with_plain_text_data() -> None:
    with pytest.raises(ProviderStreamError, match="upstream overloaded"):
        parse_chunk("upstream overloaded", event="error")


def test_error_event_with_a_bare_error_object() -> None:
    with pytest.raises(ProviderStreamError, match="quota") as caught:
        parse_chunk('{"message": "quota", "code": 429}', event="error")
    assert caught.value.code == 429


def test_error_event_with_empty_data() -> None:
    with pytest.raises(ProviderStreamError):
        parse_chunk("", event="error")


def test_error_object_without_event() -> None:
    with pytest.raises(ProviderStreamError, match="Rate limit") as caught:
        parse_chunk('{"error": {"message": "Rate limit", "code": 429, "type": "rate_limit"}}')
    assert caught.value.code == 429
    assert caught.value.error_type == "rate_limit"


def test_error_field_inside_an_ordinary_chunk() -> None:
    data = chunk({"content": ""}, top={"error": {"code": 400, "message": "Token limit reached"}})
    with pytest.raises(ProviderStreamError, match="Token limit reached") as caught:
        parse_chunk(data)
    assert caught.value.code == 400


def test_usage_sent_with_an_error_rides_on_the_error() -> None:
    usage = {"prompt_tokens": 43, "completion_tokens": 10, "cost": 0}
    data = chunk({"content": ""}, top={"error": {"message": "cut"}, "usage": usage})
    with pytest.raises(ProviderStreamError) as caught:
        parse_chunk(data)
    assert caught.value.usage is not None
    assert caught.value.usage.model_dump(exclude_unset=True) == usage
    with pytest.raises(ProviderStreamError) as caught:
        parse_chunk('{"error": {"message": "x"}}', "error")
    assert caught.value.usage is None


def test_a_malformed_usage_beside_an_error_does_not_hide_the_error() -> None:
    with pytest.raises(ProviderStreamError, match="cut") as caught:
        parse_chunk('{"error": {"message": "cut"}, "usage": {"prompt_tokens": "many"}}')
    assert caught.value.usage is None


def test_error_as_a_string() -> None:
    with pytest.raises(ProviderStreamError, match="boom") as caught:
        parse_chunk('{"error": "boom"}')
    assert caught.value.provider_message == "boom"


def test_error_without_message_quotes_the_object() -> None:
    with pytest.raises(ProviderStreamError, match="E42"):
        parse_chunk('{"error": {"code": "E42"}}')


@pytest.mark.parametrize("error", ["null", "false", '""', "{}"])
def test_empty_error_fields_are_not_errors(error: str) -> None:
    data = '{"error": ' + error + ', "choices": [{"index": 0, "delta": {"content": "x"}}]}'
    assert parse_chunk(data) == ChatChunk(text="x")


# --- protocol errors -----------------------------------------------------------------------


@pytest.mark.parametrize("data", ["{not json", "", "[DONE]", b"\xff\xfe"])
def test_invalid_json(data: str | bytes) -> None:
    with pytest.raises(StreamProtocolError, match="invalid JSON"):
        parse_chunk(data)


@pytest.mark.parametrize("data", ["[1, 2]", '"text"', "42", "null"])
def test_json_that_is_not_an_object(data: str) -> None:
    with pytest.raises(StreamProtocolError, match="expected a JSON object"):
        parse_chunk(data)


@pytest.mark.parametrize(
    "data",
    [
        '{"choices": "abc"}',
        '{"choices": [1]}',
        '{"choices": [{"delta": [1]}]}',
        '{"choices": [{"delta": {"content": 5}}]}',
        '{"choices": [{"delta": {"content": [1]}}]}',
        '{"choices": [{"delta": {"reasoning": 5}}]}',
        '{"choices": [{"delta": {"reasoning_details": [3]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"index": "0"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"id": 7}]}}]}',
        '{"choices": [{"delta": {"tool_calls": [{"function": "f"}]}}]}',
        '{"choices": [{"delta": {"tool_calls": 5}}]}',
        '{"choices": [{"delta": {"role": 1}}]}',
        '{"choices": [{"delta": {}, "finish_reason": 1}]}',
        '{"choices": [], "usage": {"prompt_tokens": "many"}}',
        '{"choices": [], "usage": 3}',
    ],
)
def test_wrong_shapes_are_protocol_errors(data: str) -> None:
    with pytest.raises(StreamProtocolError, match="unexpected chunk shape"):
        parse_chunk(data)


def test_protocol_error_quotes_a_short_excerpt() -> None:
    data = "<html>" + "x" * 10_000
    with pytest.raises(StreamProtocolError) as caught:
        parse_chunk(data)
    message = str(caught.value)
    assert "<html>xxx" in message
    assert len(message) < 300


# --- parse_completion ----------------------------------------------------------------------


def completion(message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        **extra,
    }


def test_completion_text_and_usage() -> None:
    body = completion(
        {"role": "assistant", "content": "Paris."},
        usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cost": 1},
    )
    response = parse_completion(json.dumps(body).encode())
    assert response == ModelResponse(
        content="Paris.",
        finish_reason="stop",
        usage=Usage.model_validate(
            {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cost": 1}
        ),
    )


def test_completion_accepts_str_bytes_and_dict() -> None:
    body = completion({"role": "assistant", "content": "x"})
    expected = parse_completion(body)
    assert parse_completion(json.dumps(body)) == expected
    assert parse_completion(json.dumps(body).encode()) == expected


def test_completion_reasoning_and_parts() -> None:
    body = completion(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
                {"type": "text", "text": "4"},
            ],
        }
    )
    assert parse_completion(body) == ModelResponse(
        content="4", reasoning="hmm", finish_reason="stop"
    )
    body = completion({"content": "4", "reasoning_content": "r", "reasoning": "r"})
    assert parse_completion(body).reasoning == "r"


def test_completion_tool_calls_in_order_even_without_ids() -> None:
    body = completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"type": "function", "function": {"name": "g", "arguments": '{"x":1}'}},
                {"type": "function", "function": {"name": "h", "arguments": {"y": 2}}},
            ],
        }
    )
    response = parse_completion(body)
    assert response.content is None
    assert response.tool_calls == (
        ToolCall(id="a", name="f", arguments="{}"),
        ToolCall(id="call_1", name="g", arguments='{"x":1}'),
        ToolCall(id="call_2", name="h", arguments='{"y": 2}'),
    )


def test_completion_empty_content_is_none() -> None:
    assert parse_completion(completion({"role": "assistant", "content": ""})).content is None


def test_completion_empty_choices() -> None:
    assert parse_completion({"choices": []}) == ModelResponse()


def test_completion_error() -> None:
    with pytest.raises(ProviderStreamError, match="bad model") as caught:
        parse_completion('{"error": {"message": "bad model", "code": "model_not_found"}}')
    assert caught.value.code == "model_not_found"


@pytest.mark.parametrize(
    "body",
    [
        "nope",
        "[]",
        "{}",
        '{"choices": [{"message": "x"}]}',
        {"choices": [{"message": {"content": 1}}]},
    ],
)
def test_completion_protocol_errors(body: str | dict[str, Any]) -> None:
    with pytest.raises(StreamProtocolError):
        parse_completion(body)


def test_completion_equals_the_assembled_stream() -> None:
    from rxreact.model.assembly import assemble

    streamed = [
        parse_chunk(chunk({"role": "assistant", "content": ""})),
        parse_chunk(chunk({"content": "It "})),
        parse_chunk(chunk({"content": "is."})),
        parse_chunk(chunk({}, finish_reason="stop")),
    ]
    whole = parse_completion(completion({"role": "assistant", "content": "It is."}))
    assert assemble(c for c in streamed if c is not None) == whole


# --- a choice that ends in an error (issue 11, item 3) --------------------------------------


def test_finish_reason_error_is_a_provider_error() -> None:
    with pytest.raises(ProviderStreamError) as caught:
        parse_chunk(chunk({"content": "half an ans"}, finish_reason="error"))
    assert "finish_reason 'error'" in caught.value.provider_message


def test_an_error_object_inside_choice_zero_is_a_provider_error() -> None:
    data = chunk({}, finish_reason="error", error={"message": "upstream died", "code": 502})
    with pytest.raises(ProviderStreamError) as caught:
        parse_chunk(data)
    assert (caught.value.provider_message, caught.value.code) == ("upstream died", 502)


def test_a_completion_that_ended_in_error_is_a_provider_error() -> None:
    body = {"choices": [{"index": 0, "message": {"content": "cut"}, "finish_reason": "error"}]}
    with pytest.raises(ProviderStreamError):
        parse_completion(body)
