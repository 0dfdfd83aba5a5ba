"""RoundState: the decision table of rxreact.agent.round."""

from __future__ import annotations

from typing import Any

import pytest

from rxreact.agent.round import Mode, RoundState
from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk, ToolCallDelta


def feed(state: RoundState, *chunks: ChatChunk) -> list[Any]:
    events: list[Any] = []
    for chunk in chunks:
        state.process(chunk, events.append)
    return events


ROLE = ChatChunk(role="assistant")
EMPTY = ChatChunk()
EMPTY_TEXT = ChatChunk(text="")
USAGE = ChatChunk(usage=Usage(prompt_tokens=1, completion_tokens=2, total_tokens=3))
THINK = ChatChunk(reasoning="hmm")
TEXT = ChatChunk(text="Hi")
CALL = ChatChunk(tool_calls=(ToolCallDelta(0, "c1", "f", '{"a"'),))


@pytest.mark.parametrize("chunk", [ROLE, EMPTY, EMPTY_TEXT, USAGE, THINK])
def test_chunks_that_decide_nothing(chunk: ChatChunk) -> None:
    state = RoundState(1)
    events = feed(state, chunk)
    assert state.mode is Mode.UNKNOWN and not state.first_chunk_processed
    assert [e.type for e in events] == (["reasoning_delta"] if chunk is THINK else [])


def test_text_first_decides_final_answer_and_streams() -> None:
    state = RoundState(2)
    events = feed(state, ROLE, THINK, TEXT, ChatChunk(text=" there"))
    assert state.mode is Mode.FINAL_ANSWER
    assert [(e.type, getattr(e, "delta", None)) for e in events] == [
        ("reasoning_delta", "hmm"),
        ("round_mode_decided", None),
        ("text_delta", "Hi"),
        ("text_delta", " there"),
    ]
    assert all(e.round == 2 for e in events)
    assert state.text == "Hi there" and state.reasoning == "hmm"


def test_tool_call_first_decides_tool_mode_and_later_text_is_kept_not_streamed() -> None:
    state = RoundState(1)
    events = feed(state, CALL, ChatChunk(tool_calls=(ToolCallDelta(0, None, None, ": 1}"),)), TEXT)
    assert state.mode is Mode.TOOL_CALL
    assert [e.type for e in events] == [
        "round_mode_decided",
        "tool_call_started",
        "tool_call_args_delta",
        "tool_call_args_delta",
    ]
    assert events[0].mode == "tool_call"
    message = state.assistant_message()
    assert message.content == "Hi"
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("c1", "f", '{"a": 1}')]


def test_late_tool_call_switches_the_round() -> None:
    state = RoundState(1)
    events = feed(state, TEXT, CALL)
    assert [getattr(e, "mode", None) for e in events if e.type == "round_mode_decided"] == [
        "final_answer",
        "tool_call",
    ]
    assert state.finished_event().mode == "tool_call"
    assert state.assistant_message().content == "Hi"


def test_forced_round_ignores_tool_calls() -> None:
    state = RoundState(3, forced=True)
    events = feed(state, CALL, TEXT)
    assert state.mode is Mode.FINAL_ANSWER
    assert [e.type for e in events] == ["round_mode_decided", "text_delta"]
    assert state.tool_calls() == ()


def test_provider_indexes_become_positions_and_ids_are_synthesized_per_round() -> None:
    state = RoundState(4)
    events = feed(
        state,
        ChatChunk(tool_calls=(ToolCallDelta(1, None, "a", "{}"),)),
        ChatChunk(tool_calls=(ToolCallDelta(2, "", "b", "{}"),)),
    )
    started = [(e.index, e.call_id, e.name) for e in events if e.type == "tool_call_started"]
    assert started == [(0, "call_r4_0", "a"), (1, "call_r4_1", "b")]


def test_finish_reason_and_usage_keep_the_last_value() -> None:
    state = RoundState(1)
    feed(state, TEXT, ChatChunk(finish_reason="stop"), USAGE, ChatChunk())
    event = state.finished_event()
    assert (event.mode, event.finish_reason, event.usage) == ("final_answer", "stop", USAGE.usage)


def test_empty_round_is_a_final_answer_with_no_text() -> None:
    state = RoundState(1)
    feed(state, ROLE, ChatChunk(finish_reason="stop"))
    assert state.finished_event().mode == "final_answer"
    assert state.assistant_message().content is None
