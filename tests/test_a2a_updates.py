"""Agent events -> A2A task updates (``rxreact.serve.a2a``), without a server: the operator, on
marbles and on a whole run, and the fold a client makes of its output."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex as rx
from pydantic import BaseModel
from reactivex.testing.marbles import marbles_testing

from rxreact.errors import ModelHTTPError, RunCancelledError
from rxreact.events import (
    FinalAnswer,
    ReasoningDelta,
    RoundFinished,
    RoundModeDecided,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResult,
)
from rxreact.messages import Usage

pytest.importorskip("a2a")

from a2a.types.a2a_pb2 import (
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict

from rxreact.serve.a2a import ANSWER_ARTIFACT, apply_update, to_a2a_events

USAGE = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)


class Forecast(BaseModel):
    city: str
    rain: bool


def run_events() -> list[Any]:
    return [
        RoundStarted(round=1, seq=1),
        ReasoningDelta(round=1, seq=2, delta="Thinking."),
        TextDelta(round=1, seq=3, delta="Let me look. "),
        RoundModeDecided(round=1, seq=4, mode="tool_call"),
        ToolCallStarted(round=1, seq=5, index=0, call_id="c0", name="get_weather"),
        ToolCallArgsDelta(round=1, seq=6, index=0, delta='{"city":"Oslo"}'),
        RoundFinished(round=1, seq=7, mode="tool_call"),
        ToolApprovalRequested(
            round=1, seq=8, call_id="c0", name="get_weather", arguments={"city": "Oslo"}
        ),
        ToolResult(round=1, seq=9, call_id="c0", name="get_weather", content="Rain", duration_s=0),
        RoundStarted(round=2, seq=10),
        TextDelta(round=2, seq=11, delta="Rain "),
        TextDelta(round=2, seq=12, delta="in Oslo."),
        FinalAnswer(
            round=2,
            seq=13,
            text="Rain in Oslo.",
            rounds=2,
            usage=USAGE,
            output=Forecast(city="Oslo", rain=True),
        ),
    ]


def updates_of(events: list[Any], error: Exception | None = None) -> list[Any]:
    source = rx.from_iterable(events)
    if error is not None:
        source = rx.concat(source, rx.throw(error))
    updates: list[Any] = []
    source.pipe(to_a2a_events("task-1", "ctx-1")).subscribe(updates.append)
    return updates


def status_text(update: TaskStatusUpdateEvent) -> str:
    return "".join(p.text for p in update.status.message.parts if p.HasField("text"))


def data_of(update: TaskStatusUpdateEvent) -> dict[str, Any]:
    (part,) = [p for p in update.status.message.parts if p.HasField("data")]
    data: dict[str, Any] = MessageToDict(part.data)
    return data


def test_a_run_maps_to_a_task_its_answer_artifact_and_tool_statuses() -> None:
    updates = updates_of(run_events())
    task, *rest = updates
    assert isinstance(task, Task) and task.id == "task-1" and task.context_id == "ctx-1"
    assert task.status.state == TaskState.TASK_STATE_WORKING
    kinds = [type(u).__name__ for u in rest]
    assert kinds == [
        "TaskArtifactUpdateEvent",  # "Let me look. " (a tool round's text, streamed live)
        "TaskStatusUpdateEvent",  # the round's calls
        "TaskStatusUpdateEvent",  # waits for approval
        "TaskStatusUpdateEvent",  # the result
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",
        "TaskArtifactUpdateEvent",  # the final answer replaces the streamed text
        "TaskStatusUpdateEvent",  # completed
    ]
    first_text, calls, approval, result, *_, answer, done = rest
    assert not first_text.append and [u.append for u in rest[4:6]] == [True, True]
    assert status_text(calls) == '→ get_weather({"city":"Oslo"})\n'
    assert data_of(calls) == {
        "toolCalls": [{"id": "c0", "name": "get_weather", "arguments": '{"city":"Oslo"}'}]
    }
    assert status_text(approval) == "… waits for approval of get_weather\n"
    assert data_of(result)["toolResult"] == {
        "id": "c0",
        "name": "get_weather",
        "content": "Rain",
        "isError": False,
    }
    assert {u.status.state for u in (calls, approval, result)} == {TaskState.TASK_STATE_WORKING}
    assert isinstance(answer, TaskArtifactUpdateEvent) and answer.last_chunk
    assert not answer.append and answer.artifact.artifact_id == ANSWER_ARTIFACT
    assert MessageToDict(answer.artifact)["parts"] == [
        {"text": "Rain in Oslo."},
        {"data": {"city": "Oslo", "rain": True}},
    ]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert MessageToDict(done.metadata) == {
        "seq": 13,
        "rounds": 2,
        "forced": False,
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    seqs = [MessageToDict(u.metadata)["seq"] for u in rest]
    assert seqs == [3, 7, 8, 9, 11, 12, 13, 13]  # every update says where it is in the run


def test_folding_the_updates_gives_the_answer_alone_and_the_tool_history() -> None:
    task = Task()
    for update in updates_of(run_events()):
        apply_update(task, update)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = task.artifacts
    assert artifact.parts[0].text == "Rain in Oslo."  # not "Let me look. Rain in Oslo."
    assert [m.parts[0].text[:2] for m in task.history] == ["→ ", "… ", "← "]


def test_a_failed_or_cancelled_run_ends_its_task_without_an_error() -> None:
    started = [RoundStarted(round=1, seq=1), TextDelta(round=1, seq=2, delta="Hal")]
    failed = updates_of(started, ModelHTTPError(500, "upstream said no"))
    assert failed[-1].status.state == TaskState.TASK_STATE_FAILED
    assert status_text(failed[-1]).startswith("ModelHTTPError: ")
    cancelled = updates_of(started, RunCancelledError("cancelled"))
    assert cancelled[-1].status.state == TaskState.TASK_STATE_CANCELED
    secret = updates_of(started, RuntimeError("sk-secret in a traceback"))
    assert status_text(secret[-1]) == "internal error (RuntimeError)"


def test_the_operator_on_marbles() -> None:
    with marbles_testing(timespan=1.0) as (start, cold, _hot, _exp):
        events = {
            "r": RoundStarted(round=1, seq=1),
            "t": TextDelta(round=1, seq=2, delta="Hi"),
            "f": FinalAnswer(round=1, seq=3, text="Hi", rounds=1),
        }
        source = cold("-r-t-f|", events)
        results = start(source.pipe(to_a2a_events("t1", "c1")))
    kinds = [(type(n.value.value).__name__, n.time) for n in results if n.value.kind == "N"]
    assert kinds == [
        ("Task", 200.0),  # at subscription, before any event
        ("TaskArtifactUpdateEvent", 203.0),
        ("TaskArtifactUpdateEvent", 205.0),
        ("TaskStatusUpdateEvent", 205.0),
    ]
    assert results[-1].value.kind == "C" and results[-1].time == 206.0
