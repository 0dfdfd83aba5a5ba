"""to_ui_message_stream: agent events -> AI SDK UI message stream parts, in virtual time."""

from __future__ import annotations

import json
from typing import Any

from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact import ReactAgent, ToolErrorBudgetExceededError, tool
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Fail, text_reply, tool_call_reply
from rxreact.serve.ui_stream import DONE, UIChunk, error_text, to_ui_message_stream


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def broken(city: str) -> str:
    """Always fails."""
    raise RuntimeError("no service")


def chunks_of(agent: ReactAgent, question: str = "q", **options: Any) -> list[UIChunk]:
    scheduler = agent.scheduler
    assert isinstance(scheduler, TestScheduler)
    out: list[UIChunk] = []
    errors: list[Exception] = []
    agent.stream(question).pipe(to_ui_message_stream(**options)).subscribe(
        out.append, errors.append
    )
    scheduler.start()
    assert errors == []
    return out


def types(chunks: list[UIChunk]) -> list[str]:
    return [c.part["type"] for c in chunks]


def test_plain_answer_parts_in_order_with_event_seqs() -> None:
    scheduler = TestScheduler()
    agent = ReactAgent(ScriptedModel([text_reply("Hello there world")]), scheduler=scheduler)
    chunks = chunks_of(agent, message_id="run-1")

    assert types(chunks) == [
        "start", "start-step", "text-start", "text-delta", "text-delta", "text-delta",
        "text-end", "finish-step", "finish",
    ]  # fmt: skip
    assert chunks[0].part == {"type": "start", "messageId": "run-1"}
    assert "".join(c.part["delta"] for c in chunks if c.part["type"] == "text-delta") == (
        "Hello there world"
    )
    text_ids = {c.part["id"] for c in chunks if c.part["type"].startswith("text-")}
    assert len(text_ids) == 1
    # events: round_started(1) round_mode_decided(2) text_delta(3..5) round_finished(6) final(7)
    assert [c.seq for c in chunks] == [1, 1, 3, 3, 4, 5, 6, 7, 7]
    assert chunks[-1].part == {"type": "finish", "finishReason": "stop"}


def test_tool_round_gives_input_and_output_parts_per_call() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Paris"}), ("broken", {"city": "Rome"})),
            text_reply("Paris is sunny.", reasoning="Look at the results."),
        ]
    )
    agent = ReactAgent(model, [get_weather, broken], scheduler=scheduler)
    chunks = chunks_of(agent)
    parts = [c.part for c in chunks]

    starts = [p for p in parts if p["type"] == "tool-input-start"]
    assert [(p["toolCallId"], p["toolName"]) for p in starts] == [
        ("call_0", "get_weather"),
        ("call_1", "broken"),
    ]
    streamed = "".join(
        p["inputTextDelta"]
        for p in parts
        if p["type"] == "tool-input-delta" and p["toolCallId"] == "call_0"
    )
    assert json.loads(streamed) == {"city": "Paris"}
    available = [p for p in parts if p["type"] == "tool-input-available"]
    assert [p["input"] for p in available] == [{"city": "Paris"}, {"city": "Rome"}]
    (output,) = [p for p in parts if p["type"] == "tool-output-available"]
    assert output == {
        "type": "tool-output-available",
        "toolCallId": "call_0",
        "output": "Paris: sunny",
    }
    (failed,) = [p for p in parts if p["type"] == "tool-output-error"]
    assert failed["toolCallId"] == "call_1" and "no service" in failed["errorText"]
    # One step per round: tool results inside the first, reasoning folded before the answer.
    kinds = types(chunks)
    assert kinds.count("start-step") == kinds.count("finish-step") == 2
    second = kinds.index("start-step", 2)
    assert kinds.index("tool-output-available") < second
    assert kinds[second:] == [
        "start-step", "reasoning-start", "reasoning-delta", "reasoning-delta", "reasoning-delta",
        "reasoning-delta", "reasoning-end", "text-start", "text-delta", "text-delta",
        "text-delta", "text-end", "finish-step", "finish",
    ]  # fmt: skip


def test_run_error_becomes_error_and_finish_parts_and_the_stream_completes() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [[*text_reply("Half an ans")[:-1], Fail(ToolErrorBudgetExceededError("boom"))]]
    )
    agent = ReactAgent(model, scheduler=scheduler)
    chunks = chunks_of(agent)

    assert types(chunks)[-4:] == ["text-end", "finish-step", "error", "finish"]
    assert chunks[-2].part["errorText"] == "ToolErrorBudgetExceededError: boom"
    assert chunks[-1].part == {"type": "finish", "finishReason": "error"}
    assert chunks[-1].seq is None  # no event carries the error: no SSE id


def test_after_skips_parts_of_seen_events_but_keeps_their_state() -> None:
    scheduler = TestScheduler()
    agent = ReactAgent(ScriptedModel([text_reply("Hello there world")]), scheduler=scheduler)
    full = chunks_of(agent)
    agent = ReactAgent(ScriptedModel([text_reply("Hello there world")]), scheduler=scheduler)
    resumed = chunks_of(agent, after=3)

    assert resumed == [c for c in full if c.seq is not None and c.seq > 3]
    # the text part opened before the cut is closed with the same id
    assert resumed[-3].part["id"] == full[2].part["id"]


def test_sse_encoding() -> None:
    chunk = UIChunk(4, {"type": "text-delta", "id": "text-1-1", "delta": "é\n"})
    assert chunk.to_sse() == 'id: 4\ndata: {"type":"text-delta","id":"text-1-1","delta":"é\\n"}\n\n'
    assert UIChunk(None, {"type": "finish"}).to_sse() == 'data: {"type":"finish"}\n\n'
    assert DONE == "data: [DONE]\n\n"


def test_error_text_hides_foreign_exception_messages() -> None:
    assert error_text(RuntimeError("api_key=sk-secret")) == "internal error (RuntimeError)"


def test_mapping_works_as_a_pipe_stage() -> None:
    scheduler = TestScheduler()
    agent = ReactAgent(ScriptedModel([text_reply("Hi")]), scheduler=scheduler)
    result: list[list[str]] = []
    agent.stream("q").pipe(
        to_ui_message_stream(), ops.map(lambda c: c.part["type"]), ops.to_list()
    ).subscribe(result.append)
    scheduler.start()
    assert result == [
        ["start", "start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"]
    ]
