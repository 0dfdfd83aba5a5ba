"""The durable event log contract as pytest tests: subclass :class:`EventLogConformance` and
give it a ``make_log`` fixture (see the package doc).

Each ``make_log()`` is a new log object on one shared, empty store: what another process
opening the same database would hold (its own connections, its own reader, its own owner
identity), so "from another log" here is "from another process" as far as the store can tell.
The owners' writes go through :class:`~rxreact.runs.RunWriter` directly, without an agent:
the store is under test, not the agent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import pytest
import reactivex

from rxreact.errors import (
    ApprovalDecisionError,
    RateLimitError,
    RunError,
    RunLostError,
    RunNotFoundError,
)
from rxreact.events import (
    AgentEvent,
    FinalAnswer,
    TextDelta,
    ToolApprovalRequested,
    ToolCallStarted,
)
from rxreact.runs.takeover import LostRun, ResumableLog

__all__ = ["Collected", "EventLogConformance", "MakeLog", "wait_until"]

MakeLog = Callable[..., Any]
"""``make_log(**options)``: a new log object on the store under test (every call the same
store), with ``lost_after=``, ``takeover_timeout=`` and ``ttl=`` among the options."""


def wait_until(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    """Look at ``condition`` every 10 ms until it holds (False after ``timeout``)."""
    tick = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if condition():
            return True
        tick.wait(0.01)
    return condition()


class Collected:
    """What a subscription got: its events, and its error; ``done`` once it ended."""

    def __init__(self, source: reactivex.Observable[AgentEvent]) -> None:
        self.events: list[AgentEvent] = []
        self.error: Exception | None = None
        self.done = threading.Event()
        self.subscription = source.subscribe(self.events.append, self._failed, self.done.set)

    def _failed(self, error: Exception) -> None:
        self.error = error
        self.done.set()

    def wait(self, timeout: float = 15.0) -> Collected:
        assert self.done.wait(timeout), "the subscription did not end"
        return self

    @property
    def seqs(self) -> list[int]:
        return [e.seq for e in self.events]


def deltas(start: int, count: int) -> list[AgentEvent]:
    return [TextDelta(seq=seq, round=1, delta=f"d{seq} ") for seq in range(start, start + count)]


def answer(seq: int) -> FinalAnswer:
    return FinalAnswer(seq=seq, round=1, text="done", rounds=1)


def write(writer: Any, events: list[AgentEvent]) -> None:
    for event in events:
        writer.append(event)


class EventLogConformance:
    """Every test a durable event log must pass (SQLite, Redis, Postgres, your own).

    Subclass it as ``TestSomething`` and define the fixture ``make_log``. Two optional
    fixtures open more of the suite: ``corrupt_entry`` (``corrupt_entry(run_id)`` overwrites
    the run's stored events with bytes that are not events) and ``outage`` (a context
    manager: the store is unreachable inside it and back after it, its data kept).
    """

    @pytest.fixture
    def corrupt_entry(self) -> Callable[[str], None]:
        pytest.skip("no corrupt_entry fixture for this store")

    @pytest.fixture
    def outage(self) -> Callable[[], AbstractContextManager[None]]:
        pytest.skip("no outage fixture for this store")

    def test_a_run_is_followed_from_another_log_from_any_point(self, make_log: MakeLog) -> None:
        owner, reader = make_log(), make_log()
        writer = owner.begin("r1", "c1", lambda: None)
        write(writer, deltas(1, 3))
        live = Collected(reader.read("r1"))
        later = Collected(reader.read("r1", after=2))
        write(writer, [*deltas(4, 200), answer(204)])
        writer.end()
        assert live.wait().error is None and live.seqs == list(range(1, 205))
        assert later.wait().error is None and later.seqs == list(range(3, 205))
        assert live.events == Collected(owner.read("r1")).wait().events

    def test_a_runs_error_reaches_followers_elsewhere_with_its_type(
        self, make_log: MakeLog
    ) -> None:
        owner, reader = make_log(), make_log()
        writer = owner.begin("r1", None, lambda: None)
        write(writer, deltas(1, 2))
        writer.end(RateLimitError(429, "slow down"))
        followed = Collected(reader.read("r1")).wait()
        assert isinstance(followed.error, RateLimitError) and "slow down" in str(followed.error)
        assert followed.seqs == [1, 2]

    def test_an_unknown_run_is_not_found(self, make_log: MakeLog) -> None:
        assert isinstance(Collected(make_log().read("nobody")).wait().error, RunNotFoundError)

    def test_active_run_and_cancel_from_another_log(self, make_log: MakeLog) -> None:
        owner, other = make_log(), make_log()
        cancelled = threading.Event()
        writer = owner.begin("r1", "c1", cancelled.set)
        owner.begin("r2", "c1", lambda: None)  # a later run on the same conversation
        assert other.active_run("c1") == "r1" and other.active_run("elsewhere") is None
        other.request_cancel("r1")
        assert cancelled.wait(15)
        writer.end()
        assert wait_until(lambda: other.active_run("c1") == "r2")

    def test_finished_runs_are_deleted_after_their_ttl(self, make_log: MakeLog) -> None:
        owner = make_log(ttl=0.05, lost_after=0.3)
        writer = owner.begin("r1", None, lambda: None)
        write(writer, [answer(1)])
        writer.end()
        reader = make_log()

        def gone() -> bool:
            return isinstance(Collected(reader.read("r1")).wait().error, RunNotFoundError)

        assert wait_until(gone)

    def test_a_decision_from_another_log_is_applied_once_by_the_owner(
        self, make_log: MakeLog
    ) -> None:
        owner, other = make_log(), make_log()
        writer = owner.begin("r1", None, lambda: None)
        applied: list[tuple[str, bool, str | None]] = []
        seen = threading.Event()

        def apply(call_id: str, approved: bool, reason: str | None) -> None:
            applied.append((call_id, approved, reason))
            seen.set()

        owner.watch_decisions("r1", apply)
        write(
            writer,
            [
                ToolCallStarted(seq=1, round=1, index=0, call_id="k1", name="pay"),
                ToolApprovalRequested(seq=2, round=1, call_id="k1", name="pay", arguments={}),
            ],
        )
        assert owner.flush()
        other.decide("r1", "k1", False, "not today")
        assert seen.wait(15)
        with pytest.raises(ApprovalDecisionError):
            other.decide("r1", "k1", True)  # the first decision wins
        with pytest.raises(ApprovalDecisionError):
            other.decide("r1", "nope", True)
        with pytest.raises(ApprovalDecisionError):
            other.decide("nobody", "k1", True)
        writer.end()
        assert applied == [("k1", False, "not today")]

    def test_a_lost_run_is_taken_over_by_exactly_one_log_and_goes_on(
        self, make_log: MakeLog
    ) -> None:
        dying = make_log(lost_after=0.3)
        resumable = isinstance(dying, ResumableLog)  # (a test, not a narrowing)
        if not resumable:
            pytest.skip("this log cannot hand lost runs over")
        writer = dying.begin("r1", "c1", lambda: None)
        write(writer, deltas(1, 3))
        assert dying.flush()
        follower = Collected(make_log(takeover_timeout=30).read("r1"))
        dying.close()  # its heartbeats stop: lost after 0.3 s
        claimants = [make_log(lost_after=0.3) for _ in range(3)]
        claimed: list[list[LostRun]] = [[] for _ in claimants]
        start = threading.Barrier(len(claimants))

        def claim(i: int) -> None:
            start.wait(15)

            def claimed_by_anyone() -> bool:
                claimed[i].extend(claimants[i].claim_lost())
                return any(claimed)

            wait_until(claimed_by_anyone)

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(claimants))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        winners = [(i, runs) for i, runs in enumerate(claimed) if runs]
        assert len(winners) == 1 and len(winners[0][1]) == 1
        index, (lost,) = winners[0]
        assert lost.run_id == "r1" and lost.last_seq == 3 and lost.error is None
        assert [log.claim_lost() for log in claimants] == [[], [], []]
        resumed = claimants[index].resume(lost, lambda: None)
        write(resumed, [*deltas(4, 2), answer(6)])
        resumed.end()
        assert follower.wait().error is None and follower.seqs == list(range(1, 7))

    def test_corrupt_stored_events_are_a_clear_error_never_a_hang(
        self, make_log: MakeLog, corrupt_entry: Callable[[str], None]
    ) -> None:
        owner = make_log()
        writer = owner.begin("r1", None, lambda: None)
        write(writer, [*deltas(1, 2), answer(3)])
        writer.end()
        assert owner.flush()
        corrupt_entry("r1")
        followed = Collected(make_log().read("r1")).wait()
        assert isinstance(followed.error, RunError)

    def test_the_store_going_away_and_coming_back_tears_nothing(
        self, make_log: MakeLog, outage: Callable[[], AbstractContextManager[None]]
    ) -> None:
        owner = make_log()
        writer = owner.begin("r1", None, lambda: None)
        write(writer, deltas(1, 3))
        assert owner.flush()
        with outage():
            write(writer, deltas(4, 3))  # queued: sent again until the store is back
        write(writer, [answer(7)])
        writer.end()
        assert owner.flush(30)
        followed = Collected(make_log().read("r1")).wait(30)
        assert followed.error is None or isinstance(followed.error, (RunError, RunLostError))
        assert followed.seqs == list(range(1, len(followed.seqs) + 1))  # no gap, no tear
        if followed.error is None:
            assert followed.seqs == list(range(1, 8))
