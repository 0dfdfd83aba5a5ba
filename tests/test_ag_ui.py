"""to_ag_ui_events: agent events -> AG-UI events, one segment per AG-UI run, in virtual time."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import reactivex
from reactivex.testing import TestScheduler

pytest.importorskip("ag_ui")

from rxreact import ReactAgent, RunCancelledError, tool
from rxreact.events import (
    FinalAnswer,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)
from rxreact.messages import Usage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Fail, text_reply, tool_call_reply
from rxreact.serve.ag_ui import APPROVAL_REASON, AGUIChunk, to_ag_ui_events


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def run_chunks(agent: ReactAgent, question: str = "q", **options: Any) -> list[AGUIChunk]:
    scheduler = agent.scheduler
    assert isinstance(scheduler, TestScheduler)
    out: list[AGUIChunk] = []
    errors: list[Exception] = []
    agent.stream(question).pipe(to_ag_ui_events("thread", "run", **options)).subscribe(
        out.append, errors.append
    )
    scheduler.start()
    assert errors == []
    return out


def segment(events: Sequence[Any], **options: Any) -> tuple[list[AGUIChunk], bool]:
    """The chunks of ``events`` and whether the segment completed."""
    out: list[AGUIChunk] = []
    done: list[bool] = []
    reactivex.from_iterable(events).pipe(to_ag_ui_events("thread", "run", **options)).subscribe(
        out.append, lambda e: pytest.fail(str(e)), lambda: done.append(True)
    )
    return out, bool(done)


def types(chunks: Sequence[AGUIChunk]) -> list[str]:
    return [c.to_json()["type"] for c in chunks]


def waiting_run(name: str = "confirm") -> list[Any]:
    """A run whose round 1 calls ``name`` (and get_weather), waits, then answers in round 2."""
    events: list[Any] = [
        RoundStarted(round=1),
        ToolCallStarted(round=1, index=0, call_id="c1", name=name),
        ToolCallArgsDelta(round=1, index=0, delta='{"what": "x"}'),
        ToolCallStarted(round=1, index=1, call_id="c2", name="get_weather"),
        ToolCallArgsDelta(round=1, index=1, delta='{"city": "Oslo"}'),
        RoundFinished(round=1, mode="tool_call"),
        ToolApprovalRequested(round=1, call_id="c1", name=name, arguments={"what": "x"}),
        ToolExecutionStarted(round=1, call_id="c2", name="get_weather"),
        ToolResult(round=1, call_id="c2", name="get_weather", content="Oslo: sunny", duration_s=0),
        ToolExecutionStarted(round=1, call_id="c1", name=name),
        ToolResult(round=1, call_id="c1", name=name, content="yes", duration_s=0),
        RoundStarted(round=2),
        TextDelta(round=2, delta="Done."),
        RoundFinished(round=2, mode="final_answer"),
        FinalAnswer(round=2, text="Done.", rounds=2),
    ]
    return [e.model_copy(update={"seq": n}) for n, e in enumerate(events, 1)]


def test_plain_answer_is_one_run_with_one_step_and_one_text_message() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)
    agent = ReactAgent(
        ScriptedModel([text_reply("Hello there world", usage=usage)]), scheduler=TestScheduler()
    )
    chunks = run_chunks(agent, id_prefix="r1")

    assert types(chunks) == [
        "RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED",
        "RUN_FINISHED",
    ]  # fmt: skip
    first, *rest = [c.to_json() for c in chunks]
    assert first == {"type": "RUN_STARTED", "threadId": "thread", "runId": "run",
                     "protocolVersion": "1.0"}  # fmt: skip
    assert chunks[0].seq is None and all(c.seq for c in chunks[1:])
    assert "".join(p["delta"] for p in rest if p["type"] == "TEXT_MESSAGE_CONTENT") == (
        "Hello there world"
    )
    assert {p["messageId"] for p in rest if "messageId" in p} == {"r1-1"}
    assert rest[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "thread",
        "runId": "run",
        "outcome": {"type": "success"},
        "usage": [{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}],
    }


def test_tool_round_calls_attach_to_the_rounds_message_and_results_follow() -> None:
    agent = ReactAgent(
        ScriptedModel(
            [
                tool_call_reply(("get_weather", {"city": "Paris"}), text="Let me look."),
                text_reply("Sunny.", reasoning="The tool said so."),
            ]
        ),
        [get_weather],
        scheduler=TestScheduler(),
    )
    parts = [c.to_json() for c in run_chunks(agent, id_prefix="r")]
    kinds = [p["type"] for p in parts]

    assert kinds.count("STEP_STARTED") == kinds.count("STEP_FINISHED") == 2
    start = next(p for p in parts if p["type"] == "TOOL_CALL_START")
    assert start["toolCallName"] == "get_weather" and start["parentMessageId"] == "r-1"
    args = "".join(p["delta"] for p in parts if p["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"city": "Paris"}
    assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
    assert kinds.index("TOOL_CALL_END") < kinds.index("TOOL_CALL_RESULT")
    result = next(p for p in parts if p["type"] == "TOOL_CALL_RESULT")
    assert result["toolCallId"] == start["toolCallId"] and result["content"] == "Paris: sunny"
    reasoning = [p for p in parts if p["type"].startswith("REASONING")]
    assert [p["type"] for p in reasoning[:2] + reasoning[-2:]] == [
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_END", "REASONING_END",
    ]  # fmt: skip
    assert "".join(p.get("delta", "") for p in reasoning) == "The tool said so."
    answer_start = len(kinds) - 1 - kinds[::-1].index("TEXT_MESSAGE_START")
    assert kinds.index("REASONING_END") < answer_start  # the reasoning closes before the answer


def test_run_error_closes_what_is_open_and_the_stream_completes() -> None:
    agent = ReactAgent(
        ScriptedModel([[*text_reply("Half an ans")[:-1], Fail(RuntimeError("secret"))]]),
        scheduler=TestScheduler(),
        max_tool_errors=0,
    )
    parts = [c.to_json() for c in run_chunks(agent)]

    assert [p["type"] for p in parts][-3:] == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_ERROR"]
    assert "secret" not in parts[-1]["message"]


def test_cancelled_run_finishes_with_the_cancelled_outcome() -> None:
    events = waiting_run()[:3]
    out: list[AGUIChunk] = []
    source = reactivex.concat(reactivex.from_iterable(events), reactivex.throw(RunCancelledError()))
    source.pipe(to_ag_ui_events("thread", "run")).subscribe(out.append)

    assert types(out)[-3:] == ["TOOL_CALL_END", "STEP_FINISHED", "RUN_FINISHED"]
    assert out[-1].to_json()["outcome"] == {"type": "cancelled"}


def test_a_client_tool_call_ends_the_segment_once_every_call_of_the_round_began() -> None:
    chunks, completed = segment(waiting_run(), client_tools={"confirm"})

    assert completed
    assert types(chunks)[-2:] == ["STEP_FINISHED", "RUN_FINISHED"]
    assert chunks[-1].seq == 8  # the second call's start: the round's last call to begin
    assert chunks[-1].to_json()["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}


def test_the_continuation_starts_after_the_pause_and_skips_the_clients_own_result() -> None:
    chunks, _ = segment(waiting_run(), client_tools={"confirm"}, resume=["c1"])
    parts = [c.to_json() for c in chunks]

    assert [p["type"] for p in parts] == [
        "RUN_STARTED", "STEP_STARTED", "TOOL_CALL_RESULT", "STEP_FINISHED", "STEP_STARTED",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STEP_FINISHED",
        "RUN_FINISHED",
    ]  # fmt: skip
    assert parts[1]["stepName"] == "round 1"  # the round the pause interrupted, reopened
    assert parts[2]["toolCallId"] == "c2"  # the server tool's result; the client has c1's
    assert all(c.seq is None or c.seq > 8 for c in chunks)


def test_a_continuation_that_leaves_calls_waiting_ends_at_once_naming_them() -> None:
    events = [e for e in waiting_run("confirm") if e.seq <= 7]
    events.append(ToolApprovalRequested(round=1, call_id="c2", name="deploy", arguments={}, seq=8))
    first, _ = segment(events, client_tools={"confirm"})
    answered, completed = segment(events, client_tools={"confirm"}, resume=["c2"], waiting=["c1"])

    assert first[-1].to_json()["outcome"]["type"] == "interrupt"  # c2 asks, c1 pending too
    assert completed
    assert types(answered) == ["RUN_STARTED", "STEP_STARTED", "STEP_FINISHED", "RUN_FINISHED"]
    assert answered[-1].to_json()["outcome"] == {"type": "success", "pendingToolCallIds": ["c1"]}


def test_an_approval_is_an_interrupt_naming_the_call() -> None:
    chunks, _ = segment(waiting_run("deploy"))
    outcome = chunks[-1].to_json()["outcome"]

    assert outcome["type"] == "interrupt"
    (interrupt,) = outcome["interrupts"]
    assert interrupt["id"] == interrupt["toolCallId"] == "c1"
    assert interrupt["reason"] == APPROVAL_REASON
    assert interrupt["metadata"] == {"toolName": "deploy", "arguments": {"what": "x"}}


def test_with_a_server_approver_an_approval_request_does_not_pause() -> None:
    chunks, _ = segment(waiting_run("deploy"), interrupts=False)

    assert types(chunks).count("RUN_FINISHED") == 1
    assert chunks[-1].to_json()["outcome"] == {"type": "success"}


def test_a_resumed_stream_reopens_what_was_open_and_sends_only_later_events() -> None:
    events = waiting_run()
    whole, _ = segment(events, client_tools={"confirm"})
    resumed, _ = segment(events, client_tools={"confirm"}, after=3)

    assert types(resumed)[:4] == [
        "RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_START",
    ]  # fmt: skip
    assert resumed[2].to_json() == whole[2].to_json()  # c1's start again: same id and parent
    assert [c.to_json() for c in resumed[3:]] == [c.to_json() for c in whole if (c.seq or 0) > 3]


def test_a_stream_resumed_after_its_end_is_an_empty_run() -> None:
    chunks, completed = segment(waiting_run(), after=15)

    assert completed and types(chunks) == ["RUN_STARTED", "RUN_FINISHED"]


def test_sse_encoding_carries_the_seq_as_id() -> None:
    chunks, _ = segment(waiting_run()[:1])
    assert chunks[0].to_sse().startswith('data: {"type":"RUN_STARTED"')
    assert chunks[1].to_sse() == 'id: 1\ndata: {"type":"STEP_STARTED","stepName":"round 1"}\n\n'


def nested_run(approval: bool) -> list[Any]:
    """Round 1 calls the agent tool ``researcher`` (call p1), whose own run (path ("p1",))
    writes text, maybe waits for approval of its call c9, and answers; round 2 answers."""
    inner: list[Any] = [
        RoundStarted(round=1),
        TextDelta(round=1, delta="Looking."),
        RoundFinished(round=1, mode="tool_call"),
    ]
    if approval:
        inner.append(ToolApprovalRequested(round=1, call_id="c9", name="deploy", arguments={}))
    inner += [
        ToolExecutionStarted(round=1, call_id="c9", name="deploy"),
        ToolResult(round=1, call_id="c9", name="deploy", content="done", duration_s=0),
        FinalAnswer(round=2, text="Found it.", rounds=2),
    ]
    events: list[Any] = [
        RoundStarted(round=1),
        ToolCallStarted(round=1, index=0, call_id="p1", name="researcher"),
        RoundFinished(round=1, mode="tool_call"),
        ToolExecutionStarted(round=1, call_id="p1", name="researcher"),
        *(e.model_copy(update={"path": ("p1",), "agent": "researcher"}) for e in inner),
        ToolResult(round=1, call_id="p1", name="researcher", content="Found it.", duration_s=0),
        RoundStarted(round=2),
        TextDelta(round=2, delta="Done."),
        RoundFinished(round=2, mode="final_answer"),
        FinalAnswer(round=2, text="Done.", rounds=2),
    ]
    return [e.model_copy(update={"seq": n}) for n, e in enumerate(events, 1)]


def test_an_agent_tools_run_shows_only_in_the_calls_result() -> None:
    chunks, completed = segment(nested_run(approval=False))
    parts = [c.to_json() for c in chunks]

    assert completed and types(chunks).count("RUN_FINISHED") == 1  # not at the inner answer
    assert [p["content"] for p in parts if p["type"] == "TOOL_CALL_RESULT"] == ["Found it."]
    assert "".join(p.get("delta", "") for p in parts) == "Done."  # the inner text stays inside


def test_an_agent_tools_approval_is_an_interrupt_and_its_answer_continues_the_run() -> None:
    events = nested_run(approval=True)
    asked, _ = segment(events)
    continued, _ = segment(events, resume=["c9"])

    assert asked[-1].to_json()["outcome"]["interrupts"][0]["id"] == "c9"
    assert asked[-1].seq == 8  # the inner call's approval request
    assert [c.seq for c in continued if c.seq] == sorted(c.seq for c in continued if c.seq)
    assert all(c.seq is None or c.seq > 8 for c in continued)
    assert types(continued)[-1] == "RUN_FINISHED"
    assert continued[-1].to_json()["outcome"] == {"type": "success"}
