"""Parked runs: a run waiting only for approvals survives the death of every worker.

Real OS processes (SIGKILL), a real SQLite file, redis-server and postgres: a worker parks a
run on an approval and is killed; a decision is made while no worker runs; a new worker
resumes the run and applies it. The paid count (a file) shows the tool ran at most once; a
follower attached before the kill never sees RunLostError, though its log gives up on lost
runs much sooner than the wait.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_logs import open_log, postgres_place
from test_runs_redis import last_json

from rxreact import ApprovalDecisionError, SQLiteEventLog, follow
from rxreact.agent.resume import PAST_DEADLINE
from rxreact.events import ToolApprovalRequested
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

CHILD = Path(__file__).with_name("parking_child.py")
SCRIPT = [tool_call_reply(("pay", {"amount": 3})), text_reply("Done.")]


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A SQLite file, a Redis URL or a Postgres place, empty."""
    if request.param == "sqlite":
        return str(tmp_path / "runs.db")
    if request.param == "postgres":
        return postgres_place(request.getfixturevalue("postgres_server"))
    import redis

    url: str = request.getfixturevalue("redis_server").url
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return url


def park_and_kill(where: str, url: str, paid: Path, timeout: str = "") -> str:
    """A worker parks a run on ``pay``'s approval, and is killed; the run's id."""
    worker = subprocess.Popen(
        [sys.executable, str(CHILD), "park", where, url, str(paid), timeout],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    line = worker.stdout.readline().split()
    worker.send_signal(signal.SIGKILL)
    worker.communicate(timeout=30)
    assert line[1:] == ["True"], f"the run did not park: {line}"
    return line[0]


def resume_worker(where: str, url: str, paid: Path, run_id: str) -> dict[str, Any]:
    worker = subprocess.Popen(
        [sys.executable, str(CHILD), "resume", where, url, str(paid), run_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return last_json(worker)


class Followed:
    """Every event (or the error) a follower gets."""

    def __init__(self, run_id: str, log: Any) -> None:
        self.events: list[Any] = []
        self.error: Exception | None = None
        self.asked = threading.Event()
        self.ended = threading.Event()
        self._subscription = follow(run_id, log).subscribe(self._next, self._error, self.ended.set)

    def _next(self, event: Any) -> None:
        self.events.append(event)
        if event.type == "tool_approval_requested":
            self.asked.set()

    def _error(self, error: Exception) -> None:
        self.error = error
        self.ended.set()

    def call_id(self) -> str:
        assert self.asked.wait(15)
        return str(next(e.call_id for e in self.events if e.type == "tool_approval_requested"))


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(SCRIPT) as server:
        yield server


@pytest.mark.parametrize("approved", [True, False])
def test_a_parked_run_is_decided_with_no_worker_and_finishes_in_a_new_one(
    where: str, server: MockOpenAIServer, tmp_path: Path, approved: bool
) -> None:
    paid = tmp_path / "paid"
    run_id = park_and_kill(where, server.base_url, paid)
    # This log gives up on a lost run after 0.6 s (twice the new worker's heartbeat); the run
    # waits more than 1 s with no worker (the dead one's lost_after) before one resumes it.
    with open_log(where, lost_after=0.5, takeover_timeout=0.1) as log:
        followed = Followed(run_id, log)
        call_id = followed.call_id()
        log.decide(run_id, call_id, approved, None if approved else "over budget")
        with pytest.raises(ApprovalDecisionError, match="decided already"):
            log.decide(run_id, call_id, not approved)
        with pytest.raises(ApprovalDecisionError, match="no such call"):
            log.decide(run_id, "call_nope", True)

        result = resume_worker(where, server.base_url, paid, run_id)

        assert followed.ended.wait(15)
    assert followed.error is None
    assert result["outcome"] == "Done." and result["paid"] == (1 if approved else 0)
    # The request is not announced again; the call runs (or is denied) right after it.
    expected = "tool_execution_started" if approved else "tool_result"
    assert result["after"][0] == expected
    assert [e.seq for e in followed.events] == list(range(1, len(followed.events) + 1))
    assert [e.type for e in followed.events].count("tool_approval_requested") == 1
    tool_message = str(server.requests[1]["messages"][-1])
    assert ("paid 3" in tool_message) is approved
    assert approved or "over budget" in tool_message


def test_a_parked_run_keeps_its_conversation_and_is_not_claimed_without_a_decision(
    where: str, server: MockOpenAIServer, tmp_path: Path
) -> None:
    from rxreact import OpenAIChatModel, ReactAgent, tool

    paid = tmp_path / "paid"
    run_id = park_and_kill(where, server.base_url, paid)

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        return "never"

    with (
        open_log(where, lost_after=0.01) as log,
        OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test") as model,
    ):
        agent = ReactAgent(model, [pay], event_log=log)
        followed = Followed(run_id, log)
        followed.call_id()
        assert agent.resume_runs() == []  # parked, owner long gone: nothing to do yet
        assert not followed.ended.is_set()


def test_a_parked_run_past_its_deadline_is_denied_by_the_worker_that_resumes_it(
    where: str, server: MockOpenAIServer, tmp_path: Path
) -> None:
    paid = tmp_path / "paid"
    run_id = park_and_kill(where, server.base_url, paid, timeout="0.5")

    result = resume_worker(where, server.base_url, paid, run_id)

    assert result == {"outcome": "Done.", "paid": 0, "after": result["after"]}
    assert result["after"][0] == "tool_result"
    assert PAST_DEADLINE in str(server.requests[1]["messages"][-1])


def test_a_parked_run_holds_its_conversation_past_the_lease_ttl(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        return f"paid {amount}"

    now = [1000.0]
    memory = InMemoryChatMemory(clock=lambda: now[0])
    with (
        SQLiteEventLog(tmp_path / "runs.db") as log,
        OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test") as model,
    ):
        agent = ReactAgent(model, [pay], event_log=log, memory=memory, lease_ttl=5.0)
        run = agent.start("Pay 3.", conversation_id="c1")
        followed = Followed(run.id, log)
        call_id = followed.call_id()
        assert run.parked and log.flush(10)

        now[0] += 3600.0  # an hour on: a running run's lease (5 s) would have lapsed long ago
        assert memory.try_acquire("c1", "another run", 5.0) is None
        assert log.active_run("c1") == run.id

        assert run.approve(call_id)
        assert run.result(timeout=15).answer == "Done."
    assert not run.parked
    assert memory.try_acquire("c1", "another run", 5.0) is not None  # released at the end


def test_a_closed_log_lets_its_parked_runs_go_at_once(where: str, server: MockOpenAIServer) -> None:
    from rxreact import OpenAIChatModel, ReactAgent, tool

    paid: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        paid.append(amount)
        return f"paid {amount}"

    with OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test") as model:
        log = open_log(where)  # lost_after: the default 30 s
        run = ReactAgent(model, [pay], event_log=log).start("Pay 3.")
        call_id = Followed(run.id, log).call_id()
        assert run.parked and log.flush(10)
        log.close()  # a worker stopping cleanly

        with open_log(where) as other:
            other.decide(run.id, call_id, True)
            resumed = ReactAgent(model, [pay], event_log=other).resume_runs()
            assert [r.id for r in resumed] == [run.id]  # at once, not 30 s later
            assert resumed[0].result(timeout=15).answer == "Done."
    assert paid == [3]


def test_the_watch_parks_when_every_unfinished_call_waits_for_a_person() -> None:
    from rxreact.events import (
        Handoff,
        TextDelta,
        ToolApprovalRequested,
        ToolCallStarted,
        ToolExecutionStarted,
        ToolResult,
    )
    from rxreact.runs.parking import ParkWatch

    def started(call: str) -> ToolCallStarted:
        return ToolCallStarted(round=1, index=0, call_id=call, name="t")

    def asked(call: str, path: tuple[str, ...] = ()) -> ToolApprovalRequested:
        return ToolApprovalRequested(round=1, call_id=call, name="t", arguments={}, path=path)

    def result(call: str) -> ToolResult:
        return ToolResult(round=1, call_id=call, name="t", content="ok", duration_s=0.0)

    watch = ParkWatch()
    assert not watch.see(started("a")) and not watch.see(started("b"))
    assert not watch.see(asked("b"))  # a still runs
    assert not watch.see(TextDelta(round=1, delta="x"))
    assert watch.see(result("a"))  # now b alone is left, waiting: park
    assert not watch.see(ToolExecutionStarted(round=1, call_id="b", name="t"))
    assert not watch.see(result("b"))

    child = ParkWatch()  # a call inside an agent tool is part of the parent's running call
    assert not child.see(started("c")) and not child.see(asked("x", path=("c",)))

    handed = ParkWatch()  # a handed-off run cannot be resumed elsewhere
    handed.see(Handoff(round=1, from_agent="a", to_agent="b", call_id="h"))
    assert not handed.see(started("d")) and not handed.see(asked("d"))


def test_a_second_decision_waits_for_the_unpark_the_first_one_queued() -> None:
    from rxreact.runs._record import RunRecord
    from rxreact.runs._write_queue import Fence, Item, QueuedRunWriter, Sent, WriteQueue

    class Held(WriteQueue):
        """A store whose batches wait until the test lets them through."""

        def __init__(self) -> None:
            super().__init__(RuntimeError, "test-parking")
            self.go = threading.Event()
            self.kinds: list[str] = []

        def _send(self, batch: list[Item]) -> Sent:
            assert self.go.wait(10)
            self.kinds += [item[0] for item in batch]
            return Sent([], [])

    queue = Held()
    writer = QueuedRunWriter(
        queue, RunRecord("r1", None, None), Fence("r1", "me", 1, lambda: None), lambda _: None
    )
    writer.park(None)
    writer.append(ToolApprovalRequested(round=1, seq=1, call_id="a", name="t", arguments={}))
    assert writer.parked
    told: list[str] = []
    writer.unpark(lambda ok: told.append(f"first {ok}"))
    writer.unpark(lambda ok: told.append(f"second {ok}"))  # not parked now, but not written
    assert told == []
    queue.go.set()
    assert queue.wait_sent(10)
    assert told == ["first True", "second True"]
    assert queue.kinds == ["e", "park", "unpark"]
    writer.unpark(lambda ok: told.append(f"third {ok}"))  # nothing to wait for: at once
    assert told[-1] == "third True"


def test_two_hundred_runs_park_at_once_and_each_decision_is_applied_once(
    where: str, tmp_path: Path
) -> None:
    from rxreact import ReactAgent, ScriptedModel, tool
    from rxreact.messages import ChatRequest
    from rxreact.model.scripted.replies import Reply

    def script(request: ChatRequest) -> Reply:
        if not any(m.role == "tool" for m in request.messages):
            return tool_call_reply(("pay", {"amount": 3}))
        return text_reply("Done.")

    paid: list[str] = []
    lock = threading.Lock()

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        with lock:
            paid.append("x")
        return f"paid {amount}"

    with open_log(where) as log, open_log(where) as other:
        agent = ReactAgent(ScriptedModel(script), [pay], event_log=log)  # default schedulers
        runs = [agent.start(f"Pay {i}.") for i in range(200)]
        followed = [Followed(run.id, log) for run in runs]
        calls = [f.call_id() for f in followed]
        assert log.flush(30) and all(run.parked for run in runs)
        for number, (run, call_id) in enumerate(zip(runs, calls, strict=True)):
            other.decide(run.id, call_id, number % 2 == 0, "no")  # from another log object
        answers = [run.result(timeout=60).answer for run in runs]
        assert answers == ["Done."] * 200
        assert not any(run.parked for run in runs)
    assert len(paid) == 100  # the approved half, each once
