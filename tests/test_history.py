"""ensure_tool_calls_closed: no request can carry an unanswered tool call."""

from __future__ import annotations

from rxreact.history import NOT_EXECUTED, ensure_tool_calls_closed
from rxreact.messages import AssistantMessage, ToolCall, ToolMessage, UserMessage

A = ToolCall(id="a", name="f", arguments="{}")
B = ToolCall(id="b", name="g", arguments="{}")


def test_valid_history_is_unchanged() -> None:
    history = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=(A, B)),
        ToolMessage(tool_call_id="a", content="1"),
        ToolMessage(tool_call_id="b", content="2"),
        AssistantMessage(content="done"),
    ]
    assert ensure_tool_calls_closed(history) == history


def test_missing_responses_are_synthesized_in_place() -> None:
    history = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=(A, B)),
        ToolMessage(tool_call_id="a", content="1"),
        UserMessage(content="next"),
    ]
    closed = ensure_tool_calls_closed(history)
    assert closed[:3] == history[:3]
    assert closed[3] == ToolMessage(tool_call_id="b", content=NOT_EXECUTED, name="g")
    assert closed[4] == history[3]


def test_trailing_open_calls_are_closed_and_orphans_dropped() -> None:
    history = [
        ToolMessage(tool_call_id="zzz", content="orphan"),
        UserMessage(content="q"),
        AssistantMessage(content="calling", tool_calls=(A,)),
    ]
    closed = ensure_tool_calls_closed(history, response="cancelled")
    assert [m.role for m in closed] == ["user", "assistant", "tool"]
    assert closed[-1] == ToolMessage(tool_call_id="a", content="cancelled", name="f")


def test_two_calls_with_one_id_keep_both_responses() -> None:
    twin = ToolCall(id="a", name="g", arguments="{}")
    history = [
        UserMessage(content="q"),
        AssistantMessage(tool_calls=(A, twin)),
        ToolMessage(tool_call_id="a", content="1"),
        ToolMessage(tool_call_id="a", content="2"),
    ]
    assert ensure_tool_calls_closed(history) == history
