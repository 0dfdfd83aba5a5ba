"""encode_request / decode_request: the OpenAI wire body of a ChatRequest."""

from __future__ import annotations

from typing import Any

import pytest

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.openai.request_codec import decode_request, encode_request

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather of a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CALL = ToolCall(id="call_0", name="get_weather", arguments='{"city": "Paris"}')


def tool_round(**options: Any) -> ChatRequest:
    return ChatRequest(
        messages=(
            SystemMessage(content="Be brief."),
            UserMessage(content="Weather in Paris?"),
            AssistantMessage(content=None, tool_calls=(CALL,), reasoning="Need the tool."),
            ToolMessage(tool_call_id="call_0", content="sunny", name="get_weather"),
        ),
        tools=(WEATHER,),
        tool_choice="auto",
        options=options,
    )


def test_encode_tool_round_in_openai_shape() -> None:
    body = encode_request(tool_round(), model="m", stream=True)

    assert body == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather of a city.",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "tool_choice": "auto",
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_reasoning_is_sent_only_when_asked() -> None:
    sent = encode_request(tool_round(), model="m", stream=False, send_reasoning=True)
    kept = encode_request(tool_round(), model="m", stream=False)

    assert sent["messages"][2]["reasoning_content"] == "Need the tool."
    assert "reasoning_content" not in kept["messages"][2]


def test_assistant_without_tool_calls_sends_a_string() -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"), AssistantMessage()))

    assert encode_request(request, model="m", stream=False)["messages"][1] == {
        "role": "assistant",
        "content": "",
    }


def test_tool_choice_without_tools_is_not_sent() -> None:
    # The API answers 400 to a tool_choice without tools (the forced final round sets "none").
    request = ChatRequest(messages=(UserMessage(content="hi"),), tool_choice="none")

    body = encode_request(request, model="m", stream=True)

    assert "tool_choice" not in body
    assert "tools" not in body


def test_stream_options_only_when_streaming_with_usage() -> None:
    request = ChatRequest(messages=(UserMessage(content="hi"),))

    assert "stream_options" not in encode_request(request, model="m", stream=False)
    no_usage = encode_request(request, model="m", stream=True, include_usage=False)
    assert "stream_options" not in no_usage
    assert no_usage["stream"] is True


def test_options_are_merged_last() -> None:
    body = encode_request(tool_round(temperature=0.2, stream=False), model="m", stream=True)

    assert body["temperature"] == 0.2
    assert body["stream"] is False


def test_round_trip() -> None:
    request = tool_round(temperature=0.5, max_tokens=10)

    body = encode_request(request, model="m", stream=True, send_reasoning=True)

    # ToolMessage.name is informational and not sent.
    expected = request.model_copy(
        update={
            "messages": (
                *request.messages[:3],
                ToolMessage(tool_call_id="call_0", content="sunny"),
            )
        }
    )
    assert decode_request(body) == expected


def test_decode_is_tolerant() -> None:
    body = {
        "model": "m",
        "messages": [
            {"role": "developer", "content": [{"type": "text", "text": "Be "}, {"text": "kind"}]},
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "reasoning": "thinking",
                "tool_calls": [{"id": "c", "function": {"name": "f"}}],
            },
            {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "ok"}]},
        ],
        "tools": [{"name": "f", "parameters": {"type": "object"}}],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "seed": 7,
    }

    request = decode_request(body)

    assert request.messages == (
        SystemMessage(content="Be kind"),
        UserMessage(content="hi"),
        AssistantMessage(
            tool_calls=(ToolCall(id="c", name="f", arguments=""),), reasoning="thinking"
        ),
        ToolMessage(tool_call_id="c", content="ok"),
    )
    assert request.tools == (ToolSpec(name="f", description="", parameters={"type": "object"}),)
    assert request.tool_choice == "required"
    assert request.options == {"seed": 7}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"messages": "hi"},
        {"messages": [{"role": "wizard", "content": "hi"}]},
        {"messages": ["hi"]},
    ],
)
def test_decode_rejects_what_is_not_a_request(body: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"messages|role|object"):
        decode_request(body)
