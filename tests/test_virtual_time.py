"""The whole agent loop on a TestScheduler: exact virtual times for rounds, tools, timeouts,
retries and max rounds. No real time passes in these runs (except the loopback HTTP exchange of
the retry tests, which takes no virtual time)."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact import CancellationToken, ReactAgent, ServerError, ToolMessage, tool
from rxreact.marbles import Recording
from rxreact.messages import ChatRequest
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import HTTPErrorReply, Reply, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer
from rxreact.testing.agent_marbles import assert_marbles, run_marbles


def after(seconds: float, result: str, name: str, timeout: float | None = None) -> Any:
    """A tool that answers ``result`` after ``seconds`` of (virtual) time."""

    @tool(name=name, timeout=timeout)
    def delayed() -> reactivex.Observable[str]:
        """Answers after a delay."""
        return reactivex.timer(seconds).pipe(ops.map(lambda _: result))

    return delayed


def timeline(recording: Recording, *types: str) -> list[tuple[float, str]]:
    """(time since subscription, type) of the run's events, optionally of some types only."""
    return [
        (m.time - recording.start, m.value.type)
        for m in recording.marbles
        if m.kind == "next" and not m.side and (not types or m.value.type in types)
    ]


def test_a_round_streams_each_chunk_at_its_scripted_time() -> None:
    model = ScriptedModel([text_reply("x y", reasoning="think hard", interval=1.0)])
    rec = run_marbles(lambda s: ReactAgent(model, scheduler=s))

    # role @0, reasoning @1 @2, text @3 @4, finish @5
    assert timeline(rec) == [
        (0.0, "round_started"),
        (1.0, "reasoning_delta"),
        (2.0, "reasoning_delta"),
        (3.0, "round_mode_decided"),
        (3.0, "text_delta"),
        (4.0, "text_delta"),
        (5.0, "round_finished"),
        (5.0, "final_answer"),
    ]
    assert rec.completed and rec.terminal is not None and rec.terminal.time == 5.0
    # the agent's hop onto its scheduler (deliver_on) costs no virtual time
    assert [m.time for m in rec.lane("chunks")] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert rec.threads == ["MainThread"]
    assert_marbles(
        rec,
        {"reasoning": "--a-b-----|", "text": "------a-b-|"},
        unit=0.5,
        values={"text": {"a": "x ", "b": "y"}, "reasoning": {"a": "think ", "b": "hard"}},
    )


def test_tool_round_then_answer_exact_times() -> None:
    model = ScriptedModel(
        [tool_call_reply(("wait", {}), interval=0.5), text_reply("done", interval=0.5)]
    )
    rec = run_marbles(lambda s: ReactAgent(model, [after(2.0, "ok", "wait")], scheduler=s))

    # round 1: role @0, call @0.5, args @1.0, finish @1.5; the tool runs 1.5 -> 3.5;
    # round 2 starts when the last result is in: role @3.5, "done" @4.0, finish @4.5
    assert timeline(rec) == [
        (0.0, "round_started"),
        (0.5, "round_mode_decided"),
        (0.5, "tool_call_started"),
        (1.0, "tool_call_args_delta"),
        (1.5, "round_finished"),
        (1.5, "tool_execution_started"),
        (3.5, "tool_result"),
        (3.5, "round_started"),
        (4.0, "round_mode_decided"),
        (4.0, "text_delta"),
        (4.5, "round_finished"),
        (4.5, "final_answer"),
    ]
    assert rec.of_type("tool_result")[0].duration_s == 2.0


def test_concurrent_tools_finish_out_of_order_and_history_keeps_call_order() -> None:
    tools = [after(3.0, "A", "slow"), after(1.0, "B", "fast"), after(2.0, "C", "medium")]
    model = ScriptedModel(
        [tool_call_reply(("slow", {}), ("fast", {}), ("medium", {})), text_reply("ok")]
    )
    rec = run_marbles(lambda s: ReactAgent(model, tools, scheduler=s))

    starts = [(t, e.name) for t, e in _timed(rec, "tool_execution_started")]
    results = [(t, e.name) for t, e in _timed(rec, "tool_result")]
    assert starts == [(0.0, "slow"), (0.0, "fast"), (0.0, "medium")]  # all at once, call order
    assert results == [(1.0, "fast"), (2.0, "medium"), (3.0, "slow")]  # completion order
    assert rec.times("round_started") == [0.0, 3.0]  # the completion counter: after the last
    history = model.requests[1].messages
    assert [m.content for m in history if isinstance(m, ToolMessage)] == ["A", "B", "C"]
    # a group takes one character per symbol (RxPY's marble syntax): 1/8 s per character
    assert_marbles(
        rec,
        {"tools": "(A,B,C)-b-------c-------(a,|)"},
        unit=0.125,
        values={"tools": {"A": "slow (call_0)", "a": "A", "b": "B", "c": "C"}},
    )


def test_tool_timeouts_fire_at_exact_virtual_times() -> None:
    tools = [
        after(10.0, "never", "stuck"),  # the agent's default timeout: 2.5 s
        after(10.0, "never", "impatient", timeout=1.0),  # its own: 1 s
        after(2.0, "fine", "quick"),
    ]
    model = ScriptedModel(
        [tool_call_reply(("stuck", {}), ("impatient", {}), ("quick", {})), text_reply("ok")]
    )
    rec = run_marbles(lambda s: ReactAgent(model, tools, scheduler=s, tool_timeout=2.5))

    results = [(t, e.name, e.is_error, e.duration_s) for t, e in _timed(rec, "tool_result")]
    assert results == [
        (1.0, "impatient", True, 1.0),
        (2.0, "quick", False, 2.0),
        (2.5, "stuck", True, 2.5),
    ]
    assert "timed out after 2.5 s" in rec.of_type("tool_result")[2].content
    assert rec.times("round_started") == [0.0, 2.5]


def test_a_timed_out_tool_is_cancelled_and_its_late_result_ignored() -> None:
    tokens: list[CancellationToken] = []

    @tool(timeout=1.0)
    def late(token: CancellationToken) -> reactivex.Observable[str]:
        """Answers after 5 s: too late."""
        tokens.append(token)
        return reactivex.timer(5.0).pipe(ops.map(lambda _: "late"))

    model = ScriptedModel([tool_call_reply(("late", {})), text_reply("ok", interval=1.0)])
    rec = run_marbles(lambda s: ReactAgent(model, [late], scheduler=s))

    assert tokens[0].cancelled
    assert len(rec.of_type("tool_result")) == 1
    assert rec.times("final_answer") == [3.0]  # 1 s timeout, then role @1, "ok" @2, finish @3
    assert rec.terminal is not None and rec.terminal.time == 3.0  # nothing left at 5 s


def test_dispose_at_an_exact_virtual_time_stops_everything() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([tool_call_reply(("wait", {})), text_reply("never")])
    agent = ReactAgent(model, [after(10.0, "late", "wait")], scheduler=scheduler)
    rec = run_marbles(agent, until=4.0)

    assert timeline(rec)[-1] == (0.0, "tool_execution_started")
    assert rec.terminal is None and scheduler.clock == 4.0
    scheduler.advance_to(20.0)  # the tool's timer was disposed with the run
    assert len(model.requests) == 1


def test_max_rounds_then_a_forced_round_at_exact_times() -> None:
    def script(request: ChatRequest) -> Reply:
        if request.tool_choice == "none":
            return text_reply("forced", interval=1.0)
        return tool_call_reply(("wait", {}), interval=1.0)

    model = ScriptedModel(script)
    rec = run_marbles(
        lambda s: ReactAgent(model, [after(1.0, "ok", "wait")], max_rounds=2, scheduler=s)
    )

    # each tool round: role @0, call @1, args @2, finish @3, then the tool takes 1 s
    assert timeline(rec, "round_started", "round_finished", "tool_result") == [
        (0.0, "round_started"),
        (3.0, "round_finished"),
        (4.0, "tool_result"),
        (4.0, "round_started"),
        (7.0, "round_finished"),
        (8.0, "tool_result"),
        (8.0, "round_started"),
        (10.0, "round_finished"),
    ]
    assert rec.times("max_rounds_reached") == [8.0]
    (final,) = rec.of_type("final_answer")
    assert (final.rounds, final.forced, rec.times("final_answer")) == (3, True, [10.0])
    assert [r.tool_choice for r in model.requests] == [None, None, "none"]


def test_the_same_scenario_gives_the_same_recording_every_run() -> None:
    def scenario() -> list[tuple[float, str, str]]:
        tools = [after(1.5, "x", "a"), after(0.5, "y", "b")]
        model = ScriptedModel(
            [tool_call_reply(("a", {}), ("b", {}), interval=0.25), text_reply("z w", interval=0.5)]
        )
        rec = run_marbles(lambda s: ReactAgent(model, tools, scheduler=s))
        return [(m.time, m.kind, m.lane) for m in rec.marbles]

    assert scenario() == scenario()


def test_a_long_reply_without_pauses_takes_no_virtual_time() -> None:
    model = ScriptedModel([text_reply("x" * 300, size=1)])
    rec = run_marbles(lambda s: ReactAgent(model, scheduler=s))

    assert rec.times("final_answer") == [0.0]  # today: [6.0]


# -- retries with backoff: OpenAIChatModel's retry timer runs on the subscriber's scheduler ----


def _run_over_http(script: list[Reply], max_retries: int) -> tuple[Recording, int]:
    """One run of an agent whose model talks real HTTP to the loopback mock server, with the
    model's attempts and backoff timers on the agent's TestScheduler; returns the recording and
    how many requests the server saw."""
    scheduler = TestScheduler()
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel(
            "m",
            base_url=server.base_url,
            api_key="sk-test",
            max_retries=max_retries,
            backoff=Backoff(base=0.5, factor=2.0, cap=8.0),
            io_scheduler=scheduler,  # attempts run as virtual-time actions, on this thread
            first_chunk_timeout=None,
            chunk_timeout=None,
        ) as model,
    ):
        rec = run_marbles(ReactAgent(model, scheduler=scheduler))
        return rec, len(server.requests)


@pytest.mark.integration
def test_retries_wait_their_backoff_in_virtual_time() -> None:
    script: list[Reply] = [HTTPErrorReply(503), HTTPErrorReply(502), text_reply("Hi there.")]
    rec, requests = _run_over_http(script, max_retries=2)

    assert requests == 3
    # attempt @0 fails, wait 0.5; attempt @0.5 fails, wait 1.0; attempt @1.5 streams
    assert rec.times("round_started") == [0.0]
    assert rec.times("text_delta") == [1.5, 1.5]
    assert rec.times("final_answer") == [1.5]
    assert rec.of_type("final_answer")[0].text == "Hi there."


@pytest.mark.integration
def test_retry_after_longer_than_the_backoff_is_honoured() -> None:
    script: list[Reply] = [HTTPErrorReply(429, headers={"Retry-After": "3"}), text_reply("ok")]
    rec, _ = _run_over_http(script, max_retries=1)

    assert rec.times("text_delta") == [3.0]


@pytest.mark.integration
def test_when_retries_run_out_the_last_error_ends_the_run() -> None:
    script: list[Reply] = [HTTPErrorReply(503), HTTPErrorReply(503), HTTPErrorReply(500)]
    rec, requests = _run_over_http(script, max_retries=2)

    assert requests == 3
    assert isinstance(rec.error, ServerError) and rec.error.status_code == 500
    assert rec.terminal is not None and rec.terminal.time == 1.5
    assert rec.to_marbles("rounds", unit=0.5) == "R--#"


def _timed(recording: Recording, event_type: str) -> list[tuple[float, Any]]:
    return [
        (m.time - recording.start, m.value)
        for m in recording.marbles
        if m.kind == "next" and getattr(m.value, "type", None) == event_type
    ]
