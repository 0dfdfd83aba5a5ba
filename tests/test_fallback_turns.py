"""A history made by one model, continued by another: replay items never cross providers,
and Claude with thinking on is not sent a tool turn it could not have thought."""

from __future__ import annotations

import json

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ReplayItem,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from rxreact.model.anthropic.request_codec import encode_request as anthropic_body
from rxreact.model.openai.request_codec import encode_request as chat_body
from rxreact.model.openai.responses_codec import encode_request as responses_body
from rxreact.model.switch import SWITCH_TAG

THINKING = {"type": "enabled", "budget_tokens": 1024}
CLAUDE_THOUGHT = ReplayItem(
    provider="anthropic", data={"type": "thinking", "thinking": "hm", "signature": "sig"}
)
OPENAI_REASONING = ReplayItem(
    provider="openai-responses", data={"type": "reasoning", "id": "rs_1", "summary": []}
)
SWITCH = ReplayItem(provider=SWITCH_TAG, data={"from": "a", "to": "b"})


def tool_turn(*replay: ReplayItem) -> ChatRequest:
    call = ToolCall(id="call_1", name="weather", arguments='{"city": "Oslo"}')
    return ChatRequest(
        messages=(
            UserMessage(content="Weather in Oslo?"),
            AssistantMessage(tool_calls=(call,), replay=replay),
            ToolMessage(tool_call_id="call_1", content="sunny"),
        )
    )


def test_claude_with_thinking_continues_another_models_tool_turn_without_thinking() -> None:
    body = anthropic_body(
        tool_turn(OPENAI_REASONING), model="claude", stream=True, max_tokens=2048, thinking=THINKING
    )
    assert "thinking" not in body
    assert "rs_1" not in json.dumps(body)  # the other provider's reasoning item stays home


def test_claude_keeps_thinking_when_the_tool_turn_has_its_thinking_block() -> None:
    body = anthropic_body(
        tool_turn(CLAUDE_THOUGHT), model="claude", stream=True, max_tokens=2048, thinking=THINKING
    )
    assert body["thinking"] == THINKING
    assert body["messages"][1]["content"][0]["type"] == "thinking"


def test_claude_keeps_thinking_when_the_last_turn_called_no_tools() -> None:
    request = ChatRequest(
        messages=(
            UserMessage(content="a"),
            AssistantMessage(content="b"),
            UserMessage(content="c"),
        )
    )
    body = anthropic_body(request, model="claude", stream=True, max_tokens=2048, thinking=THINKING)
    assert body["thinking"] == THINKING


def test_openai_formats_drop_claudes_thinking_and_no_format_sends_a_switch_marker() -> None:
    request = tool_turn(CLAUDE_THOUGHT, SWITCH)
    for body in (
        responses_body(request, model="gpt-5", stream=True),
        chat_body(request, model="gpt-4o", stream=True),
        anthropic_body(request, model="claude", stream=True, max_tokens=100),
    ):
        text = json.dumps(body)
        assert SWITCH_TAG not in text
        assert ("sig" in text) == (body.get("max_tokens") == 100)  # only Claude's own
