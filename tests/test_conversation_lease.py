"""One run per conversation, in virtual time: queueing, reject, busy_timeout, expiry, fencing.

Every run here is on a ``TestScheduler`` with an ``InMemoryChatMemory`` whose lease clock is
the scheduler's, so leases expire in virtual time and the times asserted are exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import (
    ConversationBusyError,
    InMemoryChatMemory,
    ReactAgent,
    ServerError,
    UserMessage,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Fail, Pause, text_reply


@dataclass
class Run:
    """What one subscription saw, with virtual times."""

    events: list[tuple[float, str]] = field(default_factory=list)
    error: tuple[float, Exception] | None = None
    completed: float | None = None

    @property
    def started(self) -> float:
        return self.events[0][0]


class World:
    """A TestScheduler, a memory on its clock, and agents on both."""

    def __init__(self) -> None:
        self.scheduler = TestScheduler()
        self.skew = 0.0  # added to the lease clock: a process paused this long
        self.memory = InMemoryChatMemory(clock=lambda: self.scheduler.clock + self.skew)

    def agent(self, model: ScriptedModel, **kw: Any) -> ReactAgent:
        return ReactAgent(model, memory=self.memory, scheduler=self.scheduler, **kw)

    def subscribe(
        self, agent: ReactAgent, question: str, conversation_id: str | None = "c", at: float = 0
    ) -> tuple[Run, list[Any]]:
        run, subscription = Run(), []
        s = self.scheduler

        def start(*_: Any) -> None:
            subscription.append(
                agent.stream(question, conversation_id).subscribe(
                    lambda e: run.events.append((s.clock, e.type)),
                    lambda e: setattr(run, "error", (s.clock, e)),
                    lambda: setattr(run, "completed", s.clock),
                )
            )

        s.schedule_absolute(at, start)
        return run, subscription

    def at(self, time: float, action: Any) -> None:
        self.scheduler.schedule_absolute(time, lambda *_: action())


def slow(text: str, seconds: float) -> list[Any]:
    """A reply that starts at once (role chunk) and finishes ``seconds`` later."""
    items = text_reply(text, 1)
    items.insert(1, Pause(seconds))
    return items


def questions(request: Any) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, UserMessage)]


def test_a_queued_run_starts_when_the_first_commits_and_sees_its_turn() -> None:
    world = World()
    model = ScriptedModel([slow("first answer", 5), slow("second answer", 3)])
    agent = world.agent(model)
    first, _ = world.subscribe(agent, "first?")
    second, _ = world.subscribe(agent, "second?")
    world.scheduler.start()

    assert first.completed == 5.0 and first.started == 0.0
    assert second.started == 5.0  # woken by the release, not by a poll
    assert second.completed == 8.0
    assert questions(model.requests[1]) == ["first?", "second?"]
    assert model.requests[1].messages[1].content == "first answer"
    assert [m.content for m in world.memory.load("c")] == [
        "first?",
        "first answer",
        "second?",
        "second answer",
    ]


def test_reject_fails_at_once_and_writes_nothing() -> None:
    world = World()
    model = ScriptedModel([slow("first", 5), slow("never", 2)])
    first, _ = world.subscribe(world.agent(model), "first?")
    second, _ = world.subscribe(world.agent(model, on_busy="reject"), "second?", at=1)
    world.scheduler.start()

    assert second.error is not None
    time, error = second.error
    assert time == 1.0 and isinstance(error, ConversationBusyError)
    assert error.conversation_id == "c" and "reject" in str(error)
    assert second.events == []
    assert len(model.requests) == 1
    assert first.completed == 5.0
    assert [m.content for m in world.memory.load("c")] == ["first?", "first"]


def test_waiting_past_busy_timeout_fails_and_writes_nothing() -> None:
    world = World()
    model = ScriptedModel([slow("long", 10), slow("never", 2)])
    first, _ = world.subscribe(world.agent(model), "first?")
    late, _ = world.subscribe(world.agent(model, busy_timeout=3.0), "late?", at=1)
    world.scheduler.start()

    assert late.error is not None
    time, error = late.error
    assert time == 4.0  # subscribed at 1, gave up 3 s later
    assert isinstance(error, ConversationBusyError) and "3 s" in str(error)
    assert first.completed == 10.0
    assert len(model.requests) == 1
    assert [m.content for m in world.memory.load("c")] == ["first?", "long"]


def test_a_dead_holder_blocks_the_conversation_for_one_ttl_at_most() -> None:
    world = World()
    dead = world.memory.try_acquire("c", "killed process", ttl=4.0)  # never renewed or released
    assert dead is not None
    model = ScriptedModel([slow("after", 2)])
    run, _ = world.subscribe(world.agent(model), "q")
    world.scheduler.start()

    # polled at 10 ms, doubling, capped at 200 ms: the first poll after 4 s gets the lease
    assert 4.0 < run.started <= 4.2
    assert run.completed == run.started + 2
    assert world.memory.renew(dead) is False
    assert [m.content for m in world.memory.load("c")] == ["q", "after"]


def test_a_run_whose_lease_was_taken_over_mid_run_writes_nothing() -> None:
    world = World()
    model = ScriptedModel([slow("too late", 10)])
    run, _ = world.subscribe(world.agent(model, lease_ttl=3.0), "q")
    thief: list[Any] = []

    def pause_the_process() -> None:  # as if it stopped 100 s: its lease expires, another takes it
        world.skew += 100
        thief.append(world.memory.try_acquire("c", "another run", ttl=60))

    world.at(2.5, pause_the_process)
    world.scheduler.start()

    assert thief[0] is not None and thief[0].token == 2
    assert run.error is not None
    time, error = run.error
    assert time == 10.0  # the renewal at 3 found the lease gone; the commit at 10 was refused
    assert isinstance(error, ConversationBusyError) and "taken over" in str(error)
    assert "final_answer" not in [t for _, t in run.events]
    assert world.memory.load("c") == []


def test_the_fenced_commit_refuses_a_lost_lease() -> None:
    world = World()
    model = ScriptedModel([slow("too late", 5)])
    # ttl 30: the first renewal (at 10) comes after the answer (at 5): only the commit can tell
    run, _ = world.subscribe(world.agent(model, lease_ttl=30.0), "q")

    def take_over() -> None:
        world.skew += 100
        assert world.memory.try_acquire("c", "another run", ttl=60) is not None

    world.at(2, take_over)
    world.scheduler.start()

    assert run.error is not None and run.error[0] == 5.0
    assert isinstance(run.error[1], ConversationBusyError)
    assert "final_answer" not in [t for _, t in run.events]
    assert world.memory.load("c") == []


def test_cancelling_a_run_releases_its_lease_at_once() -> None:
    world = World()
    model = ScriptedModel([slow("cut", 10), slow("next", 2)])
    agent = world.agent(model)
    first, subscription = world.subscribe(agent, "first?")
    second, _ = world.subscribe(agent, "second?")
    world.at(3, lambda: subscription[0].dispose())
    world.scheduler.start()

    assert first.completed is None and first.error is None
    assert second.started == 3.0
    assert questions(model.requests[1]) == ["second?"]  # the cancelled run wrote nothing
    assert [m.content for m in world.memory.load("c")] == ["second?", "next"]


def test_a_failed_run_releases_its_lease_at_once() -> None:
    world = World()
    model = ScriptedModel([[Fail(ServerError(500, "down"))], slow("next", 2)])
    agent = world.agent(model)
    first, _ = world.subscribe(agent, "first?")
    second, _ = world.subscribe(agent, "second?", at=0)
    world.scheduler.start()

    assert first.error is not None and isinstance(first.error[1], ServerError)
    assert second.started == 0.0 and second.completed == 2.0
    assert [m.content for m in world.memory.load("c")] == ["second?", "next"]


def test_runs_without_a_conversation_take_no_lease() -> None:
    world = World()
    model = ScriptedModel([slow("a", 5), slow("b", 5)])
    agent = world.agent(model, on_busy="reject")
    one, _ = world.subscribe(agent, "one?", conversation_id=None)
    two, _ = world.subscribe(agent, "two?", conversation_id=None)
    world.scheduler.start()
    assert one.started == two.started == 0.0
    assert one.completed == two.completed == 5.0


def test_other_conversations_are_not_held_up() -> None:
    world = World()
    model = ScriptedModel([slow("a", 5), slow("b", 5)])
    agent = world.agent(model, on_busy="reject")
    one, _ = world.subscribe(agent, "one?", conversation_id="a")
    two, _ = world.subscribe(agent, "two?", conversation_id="b")
    world.scheduler.start()
    assert one.completed == two.completed == 5.0


def test_queued_runs_run_one_at_a_time_each_after_the_last() -> None:
    world = World()
    model = ScriptedModel(lambda request: slow(f"answer {len(questions(request))}", 2))
    agent = world.agent(model)
    runs = [world.subscribe(agent, f"q{i}?")[0] for i in range(6)]
    world.scheduler.start()

    spans = sorted((r.started, r.completed) for r in runs)
    assert spans == [(2.0 * i, 2.0 * i + 2) for i in range(6)]
    # every request carries all earlier turns: no two runs started from the same history
    assert sorted(len(questions(r)) for r in model.requests) == [1, 2, 3, 4, 5, 6]


class LegacyMemory:
    """A backend written before leases: only ``load`` and ``append``."""

    def __init__(self) -> None:
        self.turns: dict[str, list[Any]] = {}

    def load(self, conversation_id: str) -> list[Any]:
        return list(self.turns.get(conversation_id, []))

    def append(self, conversation_id: str, messages: Any) -> None:
        self.turns.setdefault(conversation_id, []).extend(messages)


def test_a_backend_without_leases_still_keeps_runs_of_one_process_apart() -> None:
    world = World()
    legacy = LegacyMemory()
    model = ScriptedModel([slow("first answer", 5), slow("second answer", 3)])
    agent = ReactAgent(model, memory=legacy, scheduler=world.scheduler)  # type: ignore[arg-type]
    first, _ = world.subscribe(agent, "first?")
    second, _ = world.subscribe(agent, "second?")
    world.scheduler.start()

    assert first.completed == 5.0 and second.started == 5.0
    assert questions(model.requests[1]) == ["first?", "second?"]
    assert [m.content for m in legacy.load("c")] == [
        "first?",
        "first answer",
        "second?",
        "second answer",
    ]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"on_busy": "wait"}, "on_busy"),
        ({"busy_timeout": -1.0}, "busy_timeout"),
        ({"lease_ttl": 0.0}, "lease_ttl"),
    ],
)
def test_settings_are_validated(kw: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ReactAgent(ScriptedModel([]), **kw)


def test_busy_timeout_must_be_shorter_than_the_stall_watchdog() -> None:
    memory = InMemoryChatMemory()
    with pytest.raises(ValueError, match="stall_timeout"):
        ReactAgent(ScriptedModel([]), memory=memory, busy_timeout=300.0, stall_timeout=300.0)
    ReactAgent(ScriptedModel([]), memory=memory, busy_timeout=None, stall_timeout=300.0)
    ReactAgent(ScriptedModel([]), memory=memory, busy_timeout=600.0, stall_timeout=None)
    # without memory nothing waits: the defaults need no adjusting to a short watchdog
    ReactAgent(ScriptedModel([]), tool_timeout=None, busy_timeout=30.0, stall_timeout=20.0)
