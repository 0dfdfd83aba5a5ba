"""Bedrock's Converse wire format without a socket: the request body (rxreact.model.bedrock.
request_codec) and the stream's events and whole answers (rxreact.model.bedrock.wire), checked
against the rules the mock enforces as Bedrock does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxreact.errors import (
    InvalidArgumentError,
    ProviderStreamError,
    StreamInterruptedError,
    StreamProtocolError,
)
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    ReplayItem,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.assembly import assemble
from rxreact.model.bedrock.request_codec import encode_request
from rxreact.model.bedrock.wire import ConverseStreamParser, parse_response
from rxreact.testing._bedrock_request import request_problem, sign_reasoning

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CALL = ToolCall(id="tooluse_1", name="get_weather", arguments='{"city": "Oslo"}')
TOOL_TURN = (
    SystemMessage(content="Be brief."),
    UserMessage(content="Weather in Oslo?"),
    AssistantMessage(content="Checking.", tool_calls=(CALL,)),
    ToolMessage(tool_call_id="tooluse_1", content="Oslo: 3°C"),
)


def body(*messages: Any, **kwargs: Any) -> dict[str, Any]:
    tools = kwargs.pop("tools", (WEATHER,))
    request = ChatRequest(messages=tuple(messages), tools=tools, **kwargs)
    out = encode_request(request, max_tokens=kwargs.get("max_tokens"), default_options=None)
    assert request_problem(out) is None, request_problem(out)  # Bedrock would take it
    return out


def test_a_tool_round_is_converse_blocks_that_alternate_from_user() -> None:
    out = body(*TOOL_TURN, UserMessage(content="And tomorrow?"))
    assert out["system"] == [{"text": "Be brief."}]
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][1]["content"] == [
        {"text": "Checking."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "get_weather", "input": {"city": "Oslo"}}},
    ]
    # The tool's result and the next question are ONE user turn, the result first.
    assert out["messages"][2]["content"] == [
        {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "Oslo: 3°C"}]}},
        {"text": "And tomorrow?"},
    ]
    spec = out["toolConfig"]["tools"][0]["toolSpec"]
    assert (
        spec["inputSchema"] == {"json": WEATHER.parameters}
        and "toolChoice" not in out["toolConfig"]
    )


def test_a_failed_tool_is_an_error_status_and_required_is_any() -> None:
    failed = ToolMessage(tool_call_id="tooluse_1", content="boom", is_error=True)
    out = body(*TOOL_TURN[:3], failed, tool_choice="required")
    assert out["messages"][2]["content"][0]["toolResult"]["status"] == "error"
    assert out["toolConfig"]["toolChoice"] == {"any": {}}


def test_the_forced_round_keeps_tools_while_the_history_holds_tool_blocks() -> None:
    forced = body(*TOOL_TURN, UserMessage(content="Answer now."), tool_choice="none")
    assert forced["toolConfig"]["tools"] and "toolChoice" not in forced["toolConfig"]
    plain = body(UserMessage(content="Hi"), tool_choice="none")
    assert "toolConfig" not in plain  # no tool blocks: "no tools" is no toolConfig
    # Without toolConfig the history's tool blocks are refused, as Bedrock refuses them.
    stripped = dict(forced)
    del stripped["toolConfig"]
    assert "toolConfig field must be defined" in (request_problem(stripped) or "")


def test_options_map_onto_inference_config_and_model_fields() -> None:
    request = ChatRequest(
        messages=(UserMessage(content="Hi"),),
        options={"temperature": 0.2, "top_p": 0.9, "stop": "END", "top_k": 40, "max_tokens": 99},
    )
    out = encode_request(request, max_tokens=500, default_options={"temperature": 1.0})
    assert out["inferenceConfig"] == {
        "maxTokens": 99,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END"],
    }
    assert out["additionalModelRequestFields"] == {"top_k": 40}
    assert request_problem(out) is None


def test_a_json_schema_answer_is_structured_output_with_the_schema_as_a_string() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "Place", "schema": schema}}
    request = ChatRequest(
        messages=(UserMessage(content="Where?"),), options={"response_format": fmt}
    )
    out = encode_request(request, max_tokens=None, default_options=None)
    structure = out["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
    assert out["outputConfig"]["textFormat"]["type"] == "json_schema"
    assert json.loads(structure["schema"]) == {**schema, "additionalProperties": False}
    assert structure["name"] == "Place"
    judge = ChatRequest(
        messages=(UserMessage(content="Rate it"),),
        options={"response_format": {"type": "json_object"}},
    )
    assert (
        "JSON object"
        in encode_request(judge, max_tokens=None, default_options=None)["system"][0]["text"]
    )


def test_images_and_documents_go_as_bytes_and_urls_are_refused() -> None:
    image = Image.from_bytes(b"\x89PNG....", "image/png")
    document = File.from_bytes(b"%PDF-1.7", "application/pdf", "q3_report.pdf")
    out = body(UserMessage(content=(Text(text="What is this?"), image, document)))
    blocks = out["messages"][0]["content"]
    assert blocks[1] == {"image": {"format": "png", "source": {"bytes": image.data_base64}}}
    assert blocks[2]["document"]["format"] == "pdf"
    assert blocks[2]["document"]["name"] == "q3-report-pdf"  # Converse's allowed characters
    with pytest.raises(InvalidArgumentError, match="not URLs"):
        body(UserMessage(content=(Image(url="https://example.invalid/cat.png"),)))
    with pytest.raises(InvalidArgumentError, match="image/bmp"):
        body(UserMessage(content=(Image.from_bytes(b"BM", "image/bmp"),)))


def test_reasoning_replay_goes_back_first_and_only_to_bedrock() -> None:
    item = {
        "reasoningContent": {"reasoningText": {"text": "Hm.", "signature": sign_reasoning("Hm.")}}
    }
    message = AssistantMessage(
        content="Checking.",
        tool_calls=(CALL,),
        replay=(
            ReplayItem(provider="bedrock", data=item),
            ReplayItem(provider="anthropic", data={"type": "thinking"}),
        ),
    )
    out = body(TOOL_TURN[1], message, TOOL_TURN[3])
    assert out["messages"][1]["content"][0] == item
    assert len(out["messages"][1]["content"]) == 3  # the anthropic item stays behind


def frames(*events: tuple[str, dict[str, Any]]) -> list[Any]:
    parser = ConverseStreamParser()
    chunks = [parser.parse(json.dumps(data), kind) for kind, data in events]
    return [c for c in chunks if c is not None]


def test_a_streamed_tool_call_and_reasoning_assemble_with_their_replay_item() -> None:
    chunks = frames(
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}},
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Let me check."}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        (
            "contentBlockStart",
            {
                "contentBlockIndex": 2,
                "start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}},
            },
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"city":'}}},
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 2, "delta": {"toolUse": {"input": ' "Oslo"}'}}},
        ),
        ("contentBlockStop", {"contentBlockIndex": 2}),
        ("messageStop", {"stopReason": "tool_use"}),
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": 10,
                    "outputTokens": 5,
                    "totalTokens": 15,
                    "cacheReadInputTokens": 4,
                },
                "metrics": {"latencyMs": 3},
            },
        ),
    )
    response = assemble(chunks)
    assert response.content == "Let me check." and response.reasoning == "Think"
    assert response.tool_calls == (
        ToolCall(id="t1", name="get_weather", arguments='{"city": "Oslo"}'),
    )
    assert response.finish_reason == "tool_calls" and response.provider_finish_reason == "tool_use"
    assert response.replay[0].data == {
        "reasoningContent": {"reasoningText": {"text": "Think", "signature": "sig"}}
    }
    assert response.usage is not None and response.usage.prompt_tokens == 14
    assert response.usage.model_extra == {"cache_read_input_tokens": 4}


@pytest.mark.parametrize(
    ("stop", "ours"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("guardrail_intervened", "content_filter"),
        ("malformed_tool_use", "stop"),
    ],
)
def test_stop_reasons_map_and_keep_the_raw_value(stop: str, ours: str) -> None:
    (chunk,) = frames(("messageStop", {"stopReason": stop}))
    assert (chunk.finish_reason, chunk.provider_finish_reason) == (ours, stop)


@pytest.mark.parametrize(
    ("kind", "retryable"),
    [
        ("throttlingException", True),
        ("serviceUnavailableException", True),
        ("internalServerException", True),
        ("modelStreamErrorException", False),
        ("validationException", False),
    ],
)
def test_exception_events_are_typed_and_the_transient_ones_retryable(
    kind: str, retryable: bool
) -> None:
    with pytest.raises(ProviderStreamError) as caught:
        ConverseStreamParser().parse('{"message":"busy"}', f"exception:{kind}")
    assert caught.value.error_type == kind and caught.value.provider_message == "busy"
    assert caught.value.retryable is retryable


def test_the_end_rules_a_stream_cut_before_message_stop_is_interrupted() -> None:
    parser = ConverseStreamParser()
    parser.parse('{"contentBlockIndex":0,"delta":{"text":"Hi"}}', "contentBlockDelta")
    with pytest.raises(StreamInterruptedError):
        parser.end(False)
    parser.parse('{"stopReason":"end_turn"}', "messageStop")
    parser.end(True)  # only the usage (metadata) is lost: accepted


def test_a_wrong_shape_is_a_protocol_error() -> None:
    with pytest.raises(StreamProtocolError):
        ConverseStreamParser().parse(
            '{"contentBlockIndex":0,"delta":{"toolUse":{"input":"x"}}}', "contentBlockDelta"
        )
    with pytest.raises(StreamProtocolError):
        parse_response(b'{"output": {}}')


def test_a_whole_answer_parses_as_the_stream_assembles() -> None:
    raw = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"text": "Oslo: 3°C."},
                    {
                        "toolUse": {
                            "toolUseId": "t2",
                            "name": "get_weather",
                            "input": {"city": "Bergen"},
                        }
                    },
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
    }
    response = parse_response(json.dumps(raw).encode())
    assert response.content == "Oslo: 3°C." and response.tool_calls[0].name == "get_weather"
    assert response.finish_reason == "tool_calls" and response.usage is not None
    assert response.usage.total_tokens == 5
