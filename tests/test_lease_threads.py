"""One run per conversation on real thread pools: many concurrent runs, one history."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from rxreact import (
    ChatRequest,
    ConversationBusyError,
    InMemoryChatMemory,
    ReactAgent,
    RedisChatMemory,
    SQLiteChatMemory,
    UserMessage,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import ChaosScheduler


def questions(request: ChatRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


def answer_with_history_size(request: ChatRequest) -> Any:
    return text_reply(f"I have seen {len(questions(request))} questions", 3)


class Outcomes:
    """Counts finished subscriptions; ``wait`` blocks until all are in (or the timeout)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.errors: list[Exception] = []
        self.completed = 0
        self._lock = threading.Lock()
        self._all_in = threading.Event()

    def _one_more(self) -> None:
        with self._lock:
            if self.completed + len(self.errors) == self.expected:
                self._all_in.set()

    def on_error(self, error: Exception) -> None:
        with self._lock:
            self.errors.append(error)
        self._one_more()

    def on_completed(self) -> None:
        with self._lock:
            self.completed += 1
        self._one_more()

    def wait(self, timeout: float) -> bool:
        return self._all_in.wait(timeout)


@pytest.mark.parametrize("backend", ["in_memory", "sqlite", "redis_cluster"])
def test_200_concurrent_runs_on_one_conversation_each_see_all_earlier_turns(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    memory: Any
    if backend == "redis_cluster":  # a three-master cluster: leases and fenced appends by script
        request.getfixturevalue("redis_cluster").flush()
        memory = RedisChatMemory(request.getfixturevalue("redis_cluster_client"))
    elif backend == "sqlite":
        memory = SQLiteChatMemory(tmp_path / "c.db")
    else:
        memory = InMemoryChatMemory()
    model = ScriptedModel(answer_with_history_size)
    agent = ReactAgent(model, memory=memory, busy_timeout=None)
    runs = 200
    outcomes = Outcomes(runs)
    start = threading.Barrier(4)

    def subscribe_some(first: int) -> None:
        start.wait(timeout=10)
        for i in range(first, runs, 4):
            agent.stream(f"q{i}", "shared").subscribe(
                on_error=outcomes.on_error, on_completed=outcomes.on_completed
            )

    threads = [threading.Thread(target=subscribe_some, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert outcomes.wait(50), f"{outcomes.completed} of {runs} runs finished"
    assert outcomes.errors == []
    # Request n carried n questions: every run started from all the turns before it, and no
    # two runs started from the same history.
    sizes = sorted(len(questions(request)) for request in model.requests)
    assert sizes == list(range(1, runs + 1))
    history = memory.load("shared")
    assert len(history) == 2 * runs
    assert sorted(m.content for m in history if isinstance(m, UserMessage)) == sorted(
        f"q{i}" for i in range(runs)
    )
    if backend != "in_memory":
        memory.close()


def test_a_thousand_queued_runs_hold_no_threads() -> None:
    memory = InMemoryChatMemory()
    holder = memory.try_acquire("busy", "someone else", ttl=60)
    assert holder is not None
    model = ScriptedModel(answer_with_history_size)
    agent = ReactAgent(model, memory=memory, busy_timeout=None)
    threads_before = threading.active_count()
    queued = Outcomes(1000)
    subscriptions = [
        agent.stream(f"q{i}", "busy").subscribe(
            on_error=queued.on_error, on_completed=queued.on_completed
        )
        for i in range(1000)
    ]
    # While they wait, a run on another conversation gets the same pool at once.
    other = Outcomes(1)
    agent.stream("hello", "free").subscribe(
        on_error=other.on_error, on_completed=other.on_completed
    )
    assert other.wait(10) and other.errors == []
    # at most the agent's pool (8) and the shared timer thread came: nothing per queued run
    assert threading.active_count() <= threads_before + 10
    assert queued.completed == 0 and queued.errors == []
    assert [questions(r) for r in model.requests] == [["hello"]]

    # Released, the queued runs go one after another; the last 995 are cancelled while waiting.
    for subscription in subscriptions[5:]:
        subscription.dispose()
    queued.expected = 5
    memory.release(holder)
    # The release was not made through a run of this process: the head waiter's poll finds it.
    assert queued.wait(20), f"{queued.completed} of 5 runs finished"
    assert queued.errors == []
    sizes = sorted(len(questions(r)) for r in model.requests[1:])
    assert sizes == [1, 2, 3, 4, 5]
    assert memory.try_acquire("busy", "after", ttl=1) is not None  # nobody left holding it


def test_reject_under_contention_lets_exactly_one_run_through() -> None:
    memory = InMemoryChatMemory()
    gate = threading.Event()

    def slow_answer(request: ChatRequest) -> Any:
        gate.wait(10)  # hold the first run until every other one was refused
        return text_reply("done")

    model = ScriptedModel(slow_answer)
    agent = ReactAgent(model, memory=memory, on_busy="reject")
    first = Outcomes(1)
    agent.stream("first", "c").subscribe(on_error=first.on_error, on_completed=first.on_completed)
    assert wait_for(lambda: len(model.requests) == 1)
    others = Outcomes(20)
    for i in range(20):
        agent.stream(f"q{i}", "c").subscribe(
            on_error=others.on_error, on_completed=others.on_completed
        )
    assert others.wait(10)
    assert len(others.errors) == 20
    assert all(isinstance(e, ConversationBusyError) for e in others.errors)
    gate.set()
    assert first.wait(10) and first.errors == []
    assert [m.content for m in memory.load("c")] == ["first", "done"]


def wait_for(condition: Any, timeout: float = 10.0) -> bool:
    """Until ``condition()`` holds, checking on a short wait; False after ``timeout``."""
    poll = threading.Event()
    for _ in range(int(timeout / 0.005)):
        if condition():
            return True
        poll.wait(0.005)
    return bool(condition())


class CountingRenewals(InMemoryChatMemory):
    """An in-process memory that signals once ``wanted`` renewals succeeded."""

    def __init__(self, wanted: int) -> None:
        super().__init__()
        self.renewed = 0
        self.wanted = wanted
        self.enough = threading.Event()

    def renew(self, lease: Any) -> bool:
        kept = super().renew(lease)
        if kept:
            self.renewed += 1
            if self.renewed >= self.wanted:
                self.enough.set()
        return kept


def test_a_subscriber_blocked_longer_than_the_ttl_keeps_the_lease() -> None:
    memory = CountingRenewals(wanted=6)  # two whole ttls of renewals
    model = ScriptedModel([text_reply("a slow reader's answer", 4)])
    agent = ReactAgent(model, memory=memory, lease_ttl=0.3)
    outcome = Outcomes(1)
    blocked: list[bool] = []

    def on_next(event: Any) -> None:
        if not blocked:  # the first event: hold the run's delivery thread for over two ttls
            blocked.append(memory.enough.wait(10))

    agent.stream("q", "c").subscribe(on_next, outcome.on_error, outcome.on_completed)
    assert outcome.wait(20)
    assert blocked == [True]  # renewals went on while the subscriber blocked
    assert outcome.errors == [] and outcome.completed == 1
    assert [m.content for m in memory.load("c")] == ["q", "a slow reader's answer"]


def test_queued_runs_under_a_preempting_scheduler_lose_no_wake_up_or_timer() -> None:
    # ChaosScheduler holds a thread back right after it scheduled an action: exactly where a
    # timer assigned after scheduling would cancel the newer one its action had scheduled.
    scheduler = ChaosScheduler(8, preempt=0.5, max_pause=0.002, seed=9)
    memory = InMemoryChatMemory()
    model = ScriptedModel(answer_with_history_size)
    agent = ReactAgent(model, memory=memory, scheduler=scheduler, busy_timeout=None)
    runs = 60
    outcomes = Outcomes(runs)
    for i in range(runs):
        agent.stream(f"q{i}", "shared").subscribe(
            on_error=outcomes.on_error, on_completed=outcomes.on_completed
        )
    assert outcomes.wait(50), f"{outcomes.completed} of {runs} runs finished"
    assert outcomes.errors == []
    assert sorted(len(questions(r)) for r in model.requests) == list(range(1, runs + 1))
    scheduler.shutdown()
