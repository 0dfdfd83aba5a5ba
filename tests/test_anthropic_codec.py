"""The Anthropic request body (no network): roles, replay items, caching, structured outputs;
and the mock's Messages rules as HTTP 400s with Anthropic's error body."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from rxreact.errors import ProviderStreamError, StreamInterruptedError, StreamProtocolError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ReplayItem,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.anthropic.message import parse_message
from rxreact.model.anthropic.request_codec import encode_request
from rxreact.model.anthropic.wire import MessagesStreamParser
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

SPEC = ToolSpec(name="f", description="d", parameters={"type": "object", "properties": {}})
CALL = ToolCall(id="toolu_1", name="f", arguments='{"x": 1}')
THOUGHT = ReplayItem(
    provider="anthropic", data={"type": "thinking", "thinking": "hm", "signature": "sig"}
)


def body(request: ChatRequest, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("max_tokens", 1000)
    return encode_request(request, model="m", stream=True, **kwargs)


def test_system_messages_go_to_the_top_level_system() -> None:
    request = ChatRequest(
        messages=(
            SystemMessage(content="One."),
            UserMessage(content="Hi"),
            SystemMessage(content="Two."),
        )
    )
    out = body(request)
    assert out["system"] == [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    assert [m["role"] for m in out["messages"]] == ["user"]


def test_only_anthropic_replay_items_are_sent_back_first_and_unchanged() -> None:
    other = ReplayItem(provider="openai-responses", data={"type": "reasoning", "id": "rs_1"})
    request = ChatRequest(
        messages=(
            UserMessage(content="Hi"),
            AssistantMessage(content="Let me see.", tool_calls=(CALL,), replay=(other, THOUGHT)),
            ToolMessage(tool_call_id="toolu_1", content="done"),
        ),
        tools=(SPEC,),
    )
    blocks = body(request)["messages"][1]["content"]
    assert blocks == [
        THOUGHT.data,
        {"type": "text", "text": "Let me see."},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}},
    ]


def test_consecutive_user_side_messages_are_one_turn_and_empty_assistants_are_dropped() -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content="Hi"),
            AssistantMessage(content=None),
            UserMessage(content="Hello?"),
            AssistantMessage(tool_calls=(CALL, CALL.model_copy(update={"id": "toolu_2"}))),
            ToolMessage(tool_call_id="toolu_1", content="a"),
            ToolMessage(tool_call_id="toolu_2", content="b", is_error=True),
            UserMessage(content="Now answer."),
        ),
        tools=(SPEC,),
    )
    messages = body(request)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["type"] for b in messages[0]["content"]] == ["text", "text"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "b", "is_error": True},
        {"type": "text", "text": "Now answer."},
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [("auto", {"type": "auto"}), ("required", {"type": "any"}), ("none", {"type": "none"})],
)
def test_tool_choice_is_anthropics_and_sent_only_with_tools(choice: Any, wire: Any) -> None:
    request = ChatRequest(messages=(UserMessage(content="Hi"),), tools=(SPEC,), tool_choice=choice)
    assert body(request)["tool_choice"] == wire
    assert body(request, default_options={"tool_choice": {"type": "any"}})["tool_choice"] == wire
    loose = ChatRequest(
        messages=(UserMessage(content="Hi"),), tools=(SPEC,), options={"tool_choice": choice}
    )
    assert body(loose)["tool_choice"] == wire  # OpenAI's names in the options
    bare = ChatRequest(messages=(UserMessage(content="Hi"),), options={"tool_choice": wire})
    assert "tool_choice" not in body(bare)


def test_arguments_that_are_not_an_object_are_sent_as_an_empty_input() -> None:
    calls = tuple(
        ToolCall(id=f"t{i}", name="f", arguments=a) for i, a in enumerate(["", "[1]", "{bad"])
    )
    request = ChatRequest(messages=(UserMessage(content="Hi"), AssistantMessage(tool_calls=calls)))
    assert [b["input"] for b in body(request)["messages"][1]["content"]] == [{}, {}, {}]


def test_cache_marks_the_system_prompt_the_tools_and_the_last_message() -> None:
    request = ChatRequest(
        messages=(SystemMessage(content="S"), UserMessage(content="Hi")), tools=(SPEC, SPEC)
    )
    out = body(request, cache=True)
    mark = {"type": "ephemeral"}
    assert out["system"][-1]["cache_control"] == mark
    assert [t.get("cache_control") for t in out["tools"]] == [None, mark]
    assert out["messages"][-1]["content"][-1]["cache_control"] == mark
    assert "cache_control" not in str(body(request))


def test_thinking_and_options_pass_through_and_request_options_win() -> None:
    request = ChatRequest(messages=(UserMessage(content="Hi"),), options={"max_tokens": 50})
    out = body(
        request,
        thinking={"type": "enabled", "budget_tokens": 2048},
        default_options={"temperature": 1, "max_tokens": 10},
    )
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert (out["temperature"], out["max_tokens"]) == (1, 50)


def test_a_json_schema_becomes_structured_outputs_with_every_object_closed() -> None:
    schema = {
        "type": "object",
        "properties": {"inner": {"type": "object", "properties": {}}, "list": {"type": "array"}},
        "$defs": {"D": {"type": "object", "additionalProperties": True}},
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "X", "schema": schema}}
    request = ChatRequest(messages=(UserMessage(content="Hi"),), options={"response_format": fmt})
    out = body(request)
    closed = out["output_config"]["format"]["schema"]
    assert closed["additionalProperties"] is False
    assert closed["properties"]["inner"]["additionalProperties"] is False
    assert closed["$defs"]["D"]["additionalProperties"] is True  # as the caller wrote it
    assert "additionalProperties" not in schema  # the caller's schema is not changed
    assert "response_format" not in out


def test_a_whole_message_reads_like_its_stream() -> None:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"x": 1}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 2},
    }
    response = parse_message(message)
    assert (response.content, response.reasoning) == ("Calling.", "hm")
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("toolu_1", '{"x": 1}')]
    assert response.replay == (THOUGHT,)
    assert (response.finish_reason, response.provider_finish_reason) == ("tool_calls", "tool_use")
    assert response.usage is not None and response.usage.total_tokens == 9
    with pytest.raises(ProviderStreamError, match="Overloaded"):
        parse_message(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    with pytest.raises(StreamProtocolError):
        parse_message(b"[]")


def test_the_parser_skips_unknown_events_and_deltas_and_rejects_bad_shapes() -> None:
    parser = MessagesStreamParser()
    parser.parse('{"type":"message_start","message":{"usage":{"input_tokens":1}}}', None)
    parser.parse(
        '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}', None
    )
    assert parser.parse('{"type":"some_new_event"}', None) is None
    delta = '{"type":"content_block_delta","index":0,"delta":{"type":"%s","citation":{}}}'
    assert parser.parse(delta % "citations_delta", None) is None
    assert parser.parse(delta % "future_delta", None) is None
    with pytest.raises(StreamProtocolError):
        parser.parse('{"type":"content_block_delta","index":7,"delta":{}}', None)
    with pytest.raises(StreamProtocolError):
        parser.parse("not json", None)
    with pytest.raises(StreamInterruptedError):
        parser.end(True)


def post(server: MockOpenAIServer, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.origin}/v1/messages", json=payload, timeout=5)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"response_format": {"type": "json_object"}}, "response_format: Extra inputs"),
        ({"max_tokens": None}, "max_tokens"),
        ({"messages": [{"role": "assistant", "content": "x"}]}, "roles must alternate"),
        ({"messages": [user("a"), user("b")]}, "roles must alternate"),
        (
            {
                "messages": [
                    user("a"),
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                    },
                    {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                ]
            },
            "without `tool_result` blocks",
        ),
        (
            {
                "messages": [
                    user("a"),
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "first"},
                            {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
                        ],
                    },
                ]
            },
            "must come first",
        ),
        (
            {
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "max_tokens": 4096,
                "tool_choice": {"type": "any"},
                "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            },
            "forces tool use",
        ),
        (
            {"output_config": {"format": {"type": "json_schema", "schema": {"type": "object"}}}},
            "additionalProperties",
        ),
    ],
)
def test_the_mock_refuses_what_anthropic_refuses(change: dict[str, Any], message: str) -> None:
    payload = {"model": "m", "max_tokens": 100, "messages": [user("Hi")], **change}
    with MockOpenAIServer([text_reply("ok")]) as server:
        response = post(server, payload)
    assert response.status_code == 400
    error = response.json()
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert message in error["error"]["message"]


def test_the_mock_records_anthropics_headers() -> None:
    with MockOpenAIServer([text_reply("ok")]) as server:
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        payload = {"model": "m", "max_tokens": 100, "messages": [user("Hi")]}
        response = httpx.post(f"{server.origin}/v1/messages", json=payload, headers=headers)
    assert response.status_code == 200 and response.json()["content"][0]["text"] == "ok"
    assert server.request_headers[0]["x-api-key"] == "k"
    assert server.request_headers[0]["anthropic-version"] == "2023-06-01"


def test_a_tool_input_sent_whole_at_the_start_is_the_arguments() -> None:
    parser, assembler = MessagesStreamParser(), ResponseAssembler()
    events = [
        '{"type":"message_start","message":{"usage":{"input_tokens":1}}}',
        '{"type":"content_block_start","index":0,"content_block":'
        '{"type":"tool_use","id":"t1","name":"f","input":{"x":1}}}',
        '{"type":"content_block_stop","index":0}',
        '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":2}}',
        '{"type":"message_stop"}',
    ]
    for data in events:
        chunk = parser.parse(data, None)
        if chunk is not None:
            assembler.add(chunk)
    assert [(c.id, c.arguments) for c in assembler.response().tool_calls] == [("t1", '{"x": 1}')]
