"""Tests of rxreact.model.assembly: tool-call matching rules and response assembly."""

from __future__ import annotations

from rxreact.messages import ToolCall, Usage
from rxreact.model.assembly import (
    ResponseAssembler,
    ToolCallAssembler,
    ToolCallUpdate,
    assemble,
)
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta


def calls_of(*deltas: ToolCallDelta) -> tuple[ToolCall, ...]:
    assembler = ToolCallAssembler()
    for delta in deltas:
        assembler.add(delta)
    return assembler.calls()


# --- matching ------------------------------------------------------------------------------


def test_openai_parallel_calls_by_index() -> None:
    assert calls_of(
        ToolCallDelta(0, "call_a", "get_weather", ""),
        ToolCallDelta(0, None, None, '{"ci'),
        ToolCallDelta(0, None, None, 'ty": "X"}'),
        ToolCallDelta(1, "call_b", "get_stock", ""),
        ToolCallDelta(1, None, None, "{}"),
    ) == (
        ToolCall(id="call_a", name="get_weather", arguments='{"city": "X"}'),
        ToolCall(id="call_b", name="get_stock", arguments="{}"),
    )


def test_indexes_are_labels_mapped_to_positions_by_first_appearance() -> None:
    assembler = ToolCallAssembler()
    assert assembler.add(ToolCallDelta(1, "a", "f", "")).position == 0
    assert assembler.add(ToolCallDelta(5, "b", "g", "")).position == 1
    assert assembler.add(ToolCallDelta(1, None, None, "x")).position == 0
    assert assembler.add(ToolCallDelta(5, None, None, "y")).position == 1
    assert [c.arguments for c in assembler.calls()] == ["x", "y"]


def test_interleaved_indexes() -> None:
    assert calls_of(
        ToolCallDelta(0, "a", "f", "1"),
        ToolCallDelta(1, "b", "g", "2"),
        ToolCallDelta(0, None, None, "3"),
        ToolCallDelta(1, None, None, "4"),
    ) == (ToolCall(id="a", name="f", arguments="13"), ToolCall(id="b", name="g", arguments="24"))


def test_no_index_new_ids_start_new_calls() -> None:
    assert calls_of(
        ToolCallDelta(None, "a", "f", '{"x": 1}'),
        ToolCallDelta(None, "b", "g", '{"y": 2}'),
    ) == (
        ToolCall(id="a", name="f", arguments='{"x": 1}'),
        ToolCall(id="b", name="g", arguments='{"y": 2}'),
    )


def test_no_index_repeated_id_continues_its_call() -> None:
    assert calls_of(
        ToolCallDelta(None, "a", "f", "{"),
        ToolCallDelta(None, "b", "g", "["),
        ToolCallDelta(None, "a", None, "}"),
        ToolCallDelta(None, "b", None, "]"),
    ) == (ToolCall(id="a", name="f", arguments="{}"), ToolCall(id="b", name="g", arguments="[]"))


def test_no_index_no_id_continues_the_previous_call() -> None:
    assert calls_of(
        ToolCallDelta(None, "a", "f", "{"),
        ToolCallDelta(None, "b", "g", "["),
        ToolCallDelta(None, "", None, "]"),
        ToolCallDelta(None, "a", None, "}"),
        ToolCallDelta(None, None, None, "!"),
    ) == (ToolCall(id="a", name="f", arguments="{}!"), ToolCall(id="b", name="g", arguments="[]"))


def test_no_index_no_id_first_delta_starts_a_call_with_a_synthesized_id() -> None:
    assert calls_of(
        ToolCallDelta(None, None, "f", "{"),
        ToolCallDelta(None, None, None, "}"),
    ) == (ToolCall(id="call_0", name="f", arguments="{}"),)


def test_index_first_seen_joins_the_unindexed_call_with_that_id() -> None:
    assert calls_of(
        ToolCallDelta(None, "a", "f", "{"),
        ToolCallDelta(0, "a", None, "}"),
        ToolCallDelta(0, None, None, "!"),
    ) == (ToolCall(id="a", name="f", arguments="{}!"),)


def test_new_index_with_an_id_of_another_indexed_call_is_a_new_call() -> None:
    # A provider bug (duplicate ids); two calls are kept rather than merged.
    calls = calls_of(ToolCallDelta(0, "a", "f", "1"), ToolCallDelta(1, "a", "g", "2"))
    assert [(c.name, c.arguments) for c in calls] == [("f", "1"), ("g", "2")]


# --- values within a call ------------------------------------------------------------------


def test_empty_id_and_name_never_overwrite() -> None:
    # Qwen/DashScope repeat "id": "" on every delta.
    assert calls_of(
        ToolCallDelta(0, "call_x", "weather", ""),
        ToolCallDelta(0, "", "", '{"a"'),
        ToolCallDelta(0, "", None, ": 1}"),
        ToolCallDelta(0, "", None, ""),
    ) == (ToolCall(id="call_x", name="weather", arguments='{"a": 1}'),)


def test_repeated_full_name_is_not_doubled() -> None:
    assert calls_of(
        ToolCallDelta(0, "a", "search", "{"),
        ToolCallDelta(0, "a", "search", "}"),
    ) == (ToolCall(id="a", name="search", arguments="{}"),)


def test_first_id_and_name_win() -> None:
    assert calls_of(
        ToolCallDelta(0, "a", "f", ""),
        ToolCallDelta(0, "b", "g", ""),
    ) == (ToolCall(id="a", name="f", arguments=""),)


def test_id_arriving_later_replaces_the_synthesized_one() -> None:
    assembler = ToolCallAssembler()
    assert assembler.add(ToolCallDelta(0, None, "f", "{")).id == "call_0"
    assert assembler.add(ToolCallDelta(0, "real", None, "}")).id == "real"
    assert assembler.calls() == (ToolCall(id="real", name="f", arguments="{}"),)


def test_synthesized_ids_use_the_prefix_and_position() -> None:
    assembler = ToolCallAssembler(id_prefix="call_r2_")
    assembler.add(ToolCallDelta(3, None, "f", "{}"))
    assembler.add(ToolCallDelta(7, None, "g", "{}"))
    assert [c.id for c in assembler.calls()] == ["call_r2_0", "call_r2_1"]
    assert [c.id for c in assembler.calls()] == ["call_r2_0", "call_r2_1"]  # stable


def test_arguments_are_raw_even_when_not_json() -> None:
    assert calls_of(ToolCallDelta(0, "a", "f", "{not json")) == (
        ToolCall(id="a", name="f", arguments="{not json"),
    )


def test_call_whose_name_never_came_has_empty_name() -> None:
    assert calls_of(ToolCallDelta(0, "a", None, "{}")) == (
        ToolCall(id="a", name="", arguments="{}"),
    )


def test_len_counts_calls() -> None:
    assembler = ToolCallAssembler()
    assert len(assembler) == 0
    assembler.add(ToolCallDelta(0, "a", "f", ""))
    assembler.add(ToolCallDelta(0, None, None, "x"))
    assembler.add(ToolCallDelta(1, "b", "g", ""))
    assert len(assembler) == 2


# --- live updates --------------------------------------------------------------------------


def test_updates_announce_start_once_then_argument_pieces() -> None:
    assembler = ToolCallAssembler()
    updates = [
        assembler.add(ToolCallDelta(0, "a", "f", "")),
        assembler.add(ToolCallDelta(0, None, None, '{"x"')),
        assembler.add(ToolCallDelta(0, None, None, ": 1}")),
        assembler.add(ToolCallDelta(1, "b", "g", "{}")),
    ]
    assert updates == [
        ToolCallUpdate(0, True, "a", "f", ""),
        ToolCallUpdate(0, False, "a", "f", '{"x"'),
        ToolCallUpdate(0, False, "a", "f", ": 1}"),
        ToolCallUpdate(1, True, "b", "g", "{}"),
    ]


def test_arguments_before_the_name_are_held_until_the_start() -> None:
    assembler = ToolCallAssembler()
    first = assembler.add(ToolCallDelta(0, "a", None, "{"))
    assert first == ToolCallUpdate(0, False, "a", None, "")
    assert assembler.add(ToolCallDelta(0, None, "f", '"x"')) == ToolCallUpdate(
        0, True, "a", "f", '{"x"'
    )
    assert assembler.add(ToolCallDelta(0, None, "f", "}")) == ToolCallUpdate(
        0, False, "a", "f", "}"
    )


def test_update_pieces_join_to_the_final_arguments() -> None:
    deltas = [
        ToolCallDelta(0, "a", None, "{"),
        ToolCallDelta(0, None, None, '"k"'),
        ToolCallDelta(0, None, "f", ":"),
        ToolCallDelta(0, None, None, "1}"),
    ]
    assembler = ToolCallAssembler()
    shown = "".join(assembler.add(d).arguments for d in deltas)
    assert shown == assembler.calls()[0].arguments == '{"k":1}'


# --- responses -----------------------------------------------------------------------------


def test_response_joins_text_and_reasoning() -> None:
    response = assemble(
        [
            ChatChunk(role="assistant", text=""),
            ChatChunk(reasoning="Thinking"),
            ChatChunk(reasoning=" hard."),
            ChatChunk(text="Hello"),
            ChatChunk(text=", world"),
            ChatChunk(finish_reason="stop"),
        ]
    )
    assert response == ModelResponse(
        content="Hello, world", reasoning="Thinking hard.", finish_reason="stop"
    )


def test_only_empty_strings_give_none() -> None:
    response = assemble([ChatChunk(text="", reasoning=""), ChatChunk(text="")])
    assert response.content is None
    assert response.reasoning is None


def test_empty_stream_gives_empty_response() -> None:
    assert assemble([]) == ModelResponse()


def test_last_non_null_finish_reason_and_usage_win() -> None:
    first, last = Usage(prompt_tokens=1), Usage(prompt_tokens=2, cost=0.5)
    response = assemble(
        [
            ChatChunk(usage=first, finish_reason="length"),
            ChatChunk(usage=last, finish_reason="tool_calls"),
            ChatChunk(text="x"),
        ]
    )
    assert response.finish_reason == "tool_calls"
    assert response.usage is last


def test_response_tool_calls() -> None:
    response = assemble(
        [
            ChatChunk(text="Let me check."),
            ChatChunk(tool_calls=(ToolCallDelta(0, "a", "f", '{"q"'),)),
            ChatChunk(tool_calls=(ToolCallDelta(0, None, None, ": 1}"),)),
            ChatChunk(finish_reason="tool_calls"),
        ]
    )
    assert response.content == "Let me check."
    assert response.tool_calls == (ToolCall(id="a", name="f", arguments='{"q": 1}'),)


def test_saw_finish_reason() -> None:
    assembler = ResponseAssembler()
    assembler.add(ChatChunk(text="x"))
    assert not assembler.saw_finish_reason
    assembler.add(ChatChunk(finish_reason="stop"))
    assert assembler.saw_finish_reason
    assembler.add(ChatChunk(usage=Usage(total_tokens=3)))
    assert assembler.saw_finish_reason


def test_response_can_be_taken_midway() -> None:
    assembler = ResponseAssembler()
    assembler.add(ChatChunk(text="a"))
    assert assembler.response().content == "a"
    assembler.add(ChatChunk(text="b"))
    assert assembler.response().content == "ab"


def test_a_repeated_id_on_another_call_is_made_unique_and_recorded() -> None:
    assembler = ToolCallAssembler()
    updates = [
        assembler.add(ToolCallDelta(0, "dup", "f", "{}")),
        assembler.add(ToolCallDelta(1, "dup", "g", "{}")),
        assembler.add(ToolCallDelta(2, "dup", "h", "{}")),
        assembler.add(ToolCallDelta(1, None, None, "")),
    ]
    assert [u.id for u in updates] == ["dup", "dup_2", "dup_3", "dup_2"]
    assert [c.id for c in assembler.calls()] == ["dup", "dup_2", "dup_3"]
    assert assembler.renamed == {"dup_2": "dup", "dup_3": "dup"}
