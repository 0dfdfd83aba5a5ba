"""Approval before a tool runs: approver callbacks (sync, async, Observable), predicates,
denials, timeouts, and the approve/deny entry a hot run's handle uses."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact import InMemoryChatMemory, ReactAgent, RunCancelledError, tool
from rxreact.agent.run_loop import RunLoop
from rxreact.events import ToolApprovalRequested
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import ChaosScheduler
from rxreact.testing.agent_marbles import run_marbles
from rxreact.tools.approval import ApprovalDecision

ran: list[str] = []


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file."""
    ran.append(path)
    return f"deleted {path}"


@tool(requires_approval=lambda arguments: arguments["amount"] > 100)
def pay(amount: int) -> str:
    """Pays an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


@tool
def look(path: str) -> str:
    """Reads a file."""
    return f"contents of {path}"


def _model(*calls: tuple[str, dict[str, Any]]) -> ScriptedModel:
    return ScriptedModel([tool_call_reply(*calls), text_reply("done")])


def _tool_messages(result: Any) -> list[str]:
    return [m.content for m in result.messages if m.role == "tool"]


def test_an_approved_call_runs_after_the_request_in_virtual_time() -> None:
    ran.clear()
    model = _model(("delete_file", {"path": "/tmp/a"}), ("look", {"path": "/tmp/b"}))

    def approver(request: ToolApprovalRequested) -> reactivex.Observable[bool]:
        assert (request.name, request.arguments) == ("delete_file", {"path": "/tmp/a"})
        return reactivex.timer(5.0).pipe(ops.map(lambda _: True))  # a person takes 5 s

    recording = run_marbles(
        lambda s: ReactAgent(model, [delete_file, look], scheduler=s, approver=approver)
    )
    events = [m.value for m in recording.marbles if m.kind == "next" and not m.side]
    kinds = [(e.type, getattr(e, "name", "")) for e in events if "tool_" in e.type]
    delete_events = [k for k, name in kinds if name == "delete_file" and k != "tool_call_started"]
    assert delete_events == ["tool_approval_requested", "tool_execution_started", "tool_result"]
    asked = recording.times("tool_approval_requested")[0]
    started = [
        m.time
        for m in recording.marbles
        if getattr(m.value, "type", "") == "tool_execution_started"
    ]
    assert max(started) - asked == 5.0  # waited on the clock, no thread held
    assert "?" in recording.to_marbles("tools")
    assert "waiting for approval" in recording._repr_svg_()
    assert ran == ["/tmp/a"]
    assert recording.completed


def test_a_denial_is_the_result_the_model_reads_and_the_tool_never_runs() -> None:
    ran.clear()
    memory = InMemoryChatMemory()
    agent = ReactAgent(
        _model(("delete_file", {"path": "/etc"})),
        [delete_file],
        memory=memory,
        approver=lambda request: ApprovalDecision(approved=False, reason="system files"),
    )
    result = agent.run("clean up", conversation_id="c1")

    assert ran == []
    (message,) = _tool_messages(result)
    assert "denied" in message
    assert "system files" in message
    assert result.answer == "done"
    assert [m.role for m in memory.load("c1")] == ["user", "assistant", "tool", "assistant"]


def test_a_predicate_asks_only_for_the_calls_it_selects() -> None:
    ran.clear()
    asked: list[dict[str, Any]] = []

    def approver(request: ToolApprovalRequested) -> bool:
        asked.append(request.arguments)
        return False

    agent = ReactAgent(
        _model(("pay", {"amount": 20}), ("pay", {"amount": 500})), [pay], approver=approver
    )
    small, big = _tool_messages(agent.run("pay both"))
    assert asked == [{"amount": 500}]
    assert small == "paid 20"
    assert "denied" in big
    assert ran == ["pay 20"]


def test_an_async_approver_on_real_threads() -> None:
    ran.clear()

    async def approver(request: ToolApprovalRequested) -> bool:
        return request.arguments["path"].startswith("/tmp/")

    agent = ReactAgent(
        _model(("delete_file", {"path": "/tmp/x"}), ("delete_file", {"path": "/home/y"})),
        [delete_file],
        approver=approver,
    )
    allowed, refused = _tool_messages(agent.run("delete"))
    assert allowed == "deleted /tmp/x"
    assert "denied" in refused
    assert ran == ["/tmp/x"]


def test_no_decision_in_time_counts_as_a_denial() -> None:
    ran.clear()
    model = _model(("delete_file", {"path": "/tmp/a"}))
    recording = run_marbles(
        lambda s: ReactAgent(
            model,
            [delete_file],
            scheduler=s,
            approver=lambda request: reactivex.never(),
            approval_timeout=30.0,
        )
    )
    (result,) = recording.of_type("tool_result")
    assert "no decision within 30 s" in result.content
    assert result.duration_s == 30.0
    assert ran == []


def test_without_an_approver_a_cold_stream_denies_at_once() -> None:
    ran.clear()
    result = ReactAgent(_model(("delete_file", {"path": "/tmp/a"})), [delete_file]).run("go")
    (message,) = _tool_messages(result)
    assert "no approver is configured" in message
    assert ran == []


def test_approve_from_the_event_itself_and_dispose_while_waiting() -> None:
    """What ``run.approve`` / ``run.deny`` of a hot run do: answer by call id, even from the
    subscriber that sees the request (before the call has subscribed to its decision)."""
    ran.clear()
    agent = ReactAgent(_model(("delete_file", {"path": "/tmp/a"})), [delete_file])
    run = RunLoop(agent, "go", None)
    run.approvals.external = True
    done = threading.Event()

    def on_next(event: Any) -> None:
        if isinstance(event, ToolApprovalRequested):
            assert run.approvals.approve(event.call_id)

    agent._subscribe(run, on_next, lambda e: done.set(), done.set)
    assert done.wait(10)
    assert ran == ["/tmp/a"]
    assert run.approvals.pending() == []

    # A run disposed while it waits (virtual time: every step has happened when asserted):
    # the request is withdrawn, the tool never runs, nothing is committed.
    scheduler = TestScheduler()
    memory = InMemoryChatMemory()
    model = ScriptedModel(
        [tool_call_reply(("delete_file", {"path": "/tmp/b"})), text_reply("done")],
        scheduler=scheduler,
    )
    agent = ReactAgent(model, [delete_file], memory=memory, scheduler=scheduler)
    run = RunLoop(agent, "go", "c2")
    run.approvals.external = True
    seen: list[Any] = []
    subscription = agent._subscribe(run, seen.append)
    scheduler.advance_by(100.0)
    assert [e.type for e in seen][-1] == "tool_approval_requested"
    assert len(run.approvals.pending()) == 1
    assert run.waiting_for_approval == 1
    subscription.dispose()
    assert run.approvals.pending() == []
    assert not run.approvals.approve(seen[-1].call_id)  # nothing waits any more
    scheduler.advance_by(100.0)
    assert ran == ["/tmp/a"]
    assert memory.load("c2") == []


@tool(requires_approval=True)
def stepwise(n: int, progress: Callable[[Any], None]) -> str:
    """Reports two steps, then answers."""
    progress(1)
    progress(2)
    return f"done {n}"


def test_many_approved_runs_with_progress_on_a_chaotic_scheduler() -> None:
    scheduler = ChaosScheduler(8, preempt=0.5, max_pause=0.001, seed=5)
    tools = ElasticScheduler(8, name="chaos_tools")
    count = 300
    lock = threading.Lock()
    seen: dict[int, list[Any]] = {}
    ended = threading.Semaphore(0)
    failures: list[Exception] = []

    async def async_yes(request: ToolApprovalRequested) -> bool:
        return True

    for n in range(count):
        model = ScriptedModel([tool_call_reply(("stepwise", {"n": n})), text_reply("ok")])
        approver = async_yes if n % 2 else (lambda request: True)
        agent = ReactAgent(
            model, [stepwise], scheduler=scheduler, tools_scheduler=tools, approver=approver
        )

        def on_next(event: Any, n: int = n) -> None:
            if event.type.startswith("tool_") and event.type != "tool_call_args_delta":
                with lock:
                    seen.setdefault(n, []).append(event)

        def on_error(error: Exception) -> None:
            failures.append(error)
            ended.release()

        agent.stream("go").subscribe(on_next, on_error, ended.release)
    for _ in range(count):
        assert ended.acquire(timeout=30), "a run never ended"
    assert failures == []
    assert len(seen) == count
    for n, events in seen.items():
        kinds = [e.type for e in events]
        assert kinds == [
            "tool_call_started",
            "tool_approval_requested",
            "tool_execution_started",
            "tool_progress",
            "tool_progress",
            "tool_result",
        ], kinds
        assert [e.value for e in events if e.type == "tool_progress"] == [1, 2]
        assert events[-1].content == f"done {n}"


def test_approval_requests_survive_json() -> None:
    from rxreact.events import agent_event_adapter

    event = ToolApprovalRequested(round=2, call_id="c1", name="pay", arguments={"amount": 500})
    assert agent_event_adapter.validate_json(agent_event_adapter.dump_json(event)) == event


def test_a_hot_run_is_approved_and_denied_through_its_handle() -> None:
    ran.clear()
    model = _model(("delete_file", {"path": "/tmp/a"}), ("delete_file", {"path": "/etc"}))
    run = ReactAgent(model, [delete_file]).start("clean up")
    requests = run.events().pipe(
        ops.filter(lambda e: isinstance(e, ToolApprovalRequested)), ops.take(2), ops.to_list()
    )
    first, second = requests.run()  # both wait: nothing denies them for want of an approver
    assert run.approve(first.call_id)
    assert run.deny(second.call_id, reason="not system files")
    assert not run.approve(second.call_id)  # already decided

    result = run.result(timeout=10)
    allowed, refused = _tool_messages(result)
    assert allowed == "deleted /tmp/a"
    assert "not system files" in refused
    assert ran == ["/tmp/a"]


def test_cancelling_a_hot_run_that_waits_for_approval() -> None:
    ran.clear()
    memory = InMemoryChatMemory()
    agent = ReactAgent(_model(("delete_file", {"path": "/tmp/a"})), [delete_file], memory=memory)
    run = agent.start("clean up", conversation_id="c3")
    request = (
        run.events()
        .pipe(ops.filter(lambda e: isinstance(e, ToolApprovalRequested)), ops.first())
        .run()
    )
    run.cancel()
    assert run.done
    run.approve(request.call_id)  # too late: the run, and its wait, are over
    with pytest.raises(RunCancelledError):
        run.result(timeout=10)
    assert ran == []
    assert memory.load("c3") == []


def test_a_run_waiting_for_approval_is_not_stalled() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel(
        [tool_call_reply(("delete_file", {"path": "/tmp/a"})), text_reply("done")],
        scheduler=scheduler,
    )
    agent = ReactAgent(
        model, [delete_file], scheduler=scheduler, tool_timeout=10.0, stall_timeout=30.0
    )
    run = RunLoop(agent, "go", None)
    run.approvals.external = True  # as a hot run's handle does
    seen: list[Any] = []
    failures: list[Exception] = []
    agent._subscribe(run, seen.append, failures.append)
    scheduler.advance_by(1000.0)  # a person away for far longer than stall_timeout
    assert failures == []
    assert seen[-1].type == "tool_approval_requested"
    assert run.approvals.approve(seen[-1].call_id)
    scheduler.advance_by(10.0)
    assert seen[-1].type == "final_answer"
