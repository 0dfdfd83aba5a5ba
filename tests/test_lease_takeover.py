"""A run's conversation lease across a takeover and a long wait, in virtual time.

- a resumed run takes its lost owner's recorded lease over at once (``hand_over``), commits
  its turn with the new lease, and the old owner (only paused) is fenced out;
- it waits for the conversation as before when the lease was granted again since, or when the
  memory cannot hand leases over;
- the start checkpoint records the lease, a resume records the one it took, and the next
  resume takes that one over;
- ``hold_conversation(ttl)`` keeps the lease for ``ttl`` at each renewal, past the normal ttl.

Every run is on a ``TestScheduler`` with an ``InMemoryChatMemory`` on its clock (``skew``
moves the lease clock alone: a process that stalled that long).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from test_conversation_lease import Run, World, slow

from rxreact import (
    ChatMemoryError,
    ConversationBusyError,
    InMemoryChatMemory,
    InvalidArgumentError,
    ReactAgent,
)
from rxreact.agent._rebuild import rebuild
from rxreact.agent.resume import ResumedRun
from rxreact.agent.run_loop import RunLoop
from rxreact.memory import Lease
from rxreact.messages import Message, UserMessage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply
from rxreact.runs.checkpoints import Checkpoint, Checkpointer, decode_checkpoint, encode_checkpoint
from rxreact.runs.takeover import LostRun

QUESTION = UserMessage(content="Weather in Oslo?")


class Writer:
    """A durable log's checkpoint writer, in a list: each one committed at once."""

    def __init__(self) -> None:
        self.written: list[Checkpoint] = []

    def checkpoint(self, body: bytes, on_sent: Callable[[bool], None]) -> None:
        self.written.append(decode_checkpoint(body, f"#{len(self.written)}"))
        on_sent(True)


def lost_run(*checkpoints: Checkpoint) -> LostRun:
    """A run whose owner stopped after writing ``checkpoints`` (and no event)."""
    bodies = [(f"r/{n}", encode_checkpoint(c)) for n, c in enumerate(checkpoints)]
    return LostRun("r", "c", 2, bodies)


def started(lease: Lease | None) -> Checkpoint:
    return Checkpoint(
        kind="start", messages=(QUESTION,), conversation_id="c", agent="agent", lease=lease
    )


def subscribe(world: World, run: RunLoop, at: float = 0) -> Run:
    """Subscribe to ``run`` at virtual time ``at``, as ``agent.stream`` does."""
    seen, s = Run(), world.scheduler

    def start(*_: Any) -> None:
        run.agent._subscribe(
            run,
            lambda e: seen.events.append((s.clock, e.type)),
            lambda e: setattr(seen, "error", (s.clock, e)),
            lambda: setattr(seen, "completed", s.clock),
        )

    s.schedule_absolute(at, start)
    return seen


def resumed(agent: ReactAgent, lost: LostRun, writer: Writer | None = None) -> ResumedRun:
    run = ResumedRun(agent, lost, rebuild(lost, agent.name, list(agent.tools)))
    if writer is not None:
        run.checkpoints = Checkpointer(writer)
    return run


def contents(messages: Sequence[Message]) -> list[Any]:
    return [m.content for m in messages]


def test_a_resumed_run_takes_the_lease_at_once_and_fences_the_paused_owner_out() -> None:
    world = World()
    old = world.memory.try_acquire("c", "host-a/1/r", 3600)  # the owner is paused, not dead
    assert old is not None
    agent = world.agent(ScriptedModel([slow("Oslo: sunny.", 2)]), lease_ttl=3600)
    run = resumed(agent, lost_run(started(old)))
    seen = subscribe(world, run)
    world.scheduler.start()

    assert seen.error is None and seen.started == 0.0 and seen.completed == 2.0  # no wait
    assert run.lease is not None and run.lease.token == old.token + 1
    assert run.lease.owner.endswith("/r") and run.lease.owner != old.owner
    assert contents(world.memory.load("c")) == ["Weather in Oslo?", "Oslo: sunny."]
    with pytest.raises(ConversationBusyError):  # the paused owner wakes up and commits
        world.memory.append("c", [QUESTION], lease=old)
    assert world.memory.renew(old) is False
    assert len(world.memory.load("c")) == 2


def test_a_lease_granted_again_since_is_waited_for_as_before() -> None:
    world = World()
    old = world.memory.try_acquire("c", "host-a/1/r", 5)
    assert old is not None
    other = world.agent(ScriptedModel([slow("other answer", 10)]))
    world.subscribe(other, "another question?", at=6)  # after the old lease lapsed
    agent = world.agent(ScriptedModel([slow("Oslo: sunny.", 2)]))
    seen = subscribe(world, resumed(agent, lost_run(started(old))), at=7)
    world.scheduler.start()

    assert seen.error is None
    assert seen.started == 16.0  # woken when the other run let the conversation go
    assert contents(world.memory.load("c"))[-2:] == ["Weather in Oslo?", "Oslo: sunny."]


class LeasesWithoutHandOver:
    """A third-party memory with leases but no ``hand_over``."""

    def __init__(self, memory: InMemoryChatMemory) -> None:
        self.load, self.append = memory.load, memory.append
        self.try_acquire, self.renew, self.release = (
            memory.try_acquire,
            memory.renew,
            memory.release,
        )


def test_a_memory_without_hand_over_makes_the_resumed_run_wait_for_the_lease() -> None:
    world = World()
    old = world.memory.try_acquire("c", "host-a/1/r", 30)
    assert old is not None
    agent = ReactAgent(
        ScriptedModel([slow("Oslo: sunny.", 2)]),
        memory=LeasesWithoutHandOver(world.memory),
        scheduler=world.scheduler,
    )
    seen = subscribe(world, resumed(agent, lost_run(started(old))))
    world.scheduler.start()

    assert seen.error is None
    assert 30.0 <= seen.started <= 30.2  # the old lease lapsed; found by the next poll
    assert contents(world.memory.load("c")) == ["Weather in Oslo?", "Oslo: sunny."]


def test_a_start_checkpoint_without_a_lease_resumes_by_waiting() -> None:
    """Checkpoints written before leases were recorded still decode, and resume as before."""
    assert decode_checkpoint('{"kind": "start"}', "old").lease is None
    world = World()
    assert world.memory.try_acquire("c", "host-a/1/r", 30) is not None
    agent = world.agent(ScriptedModel([slow("Oslo: sunny.", 2)]))
    seen = subscribe(world, resumed(agent, lost_run(started(None))))
    world.scheduler.start()

    assert seen.error is None and 30.0 <= seen.started <= 30.2


def test_the_start_records_the_lease_and_each_resume_the_one_it_took() -> None:
    world = World()
    first = RunLoop(world.agent(ScriptedModel([slow("never finished", 100)])), "Hi?", "c")
    writer = Writer()
    first.checkpoints = Checkpointer(writer)
    subscribe(world, first)
    world.scheduler.advance_to(1)
    (start,) = writer.written
    assert start.kind == "start" and start.lease == first.lease
    assert start.lease is not None and start.lease.owner.endswith(first.run_id)

    # Its process stops (nothing renews its lease any more); another resumes the run, records
    # the lease it took, and stops too; a third takes that one over, still at once.
    second_writer = Writer()
    agent = world.agent(ScriptedModel([slow("never finished", 100)]))
    second = resumed(agent, lost_run(start), second_writer)
    subscribe(world, second, at=2)
    world.scheduler.advance_to(3)
    (took,) = second_writer.written
    assert took.kind == "lease" and took.lease == second.lease
    assert took.lease is not None and took.lease.token == start.lease.token + 1

    lost = lost_run(start, took)
    assert rebuild(lost, "agent", []).lease == took.lease
    third = resumed(world.agent(ScriptedModel([text_reply("done")])), lost)
    seen = subscribe(world, third, at=4)
    world.scheduler.advance_to(5)
    assert seen.error is None and seen.started == 4.0 and seen.completed is not None
    assert third.lease is not None and third.lease.token == start.lease.token + 2
    with pytest.raises(ConversationBusyError):
        world.memory.append("c", [QUESTION], lease=second.lease)


def test_hold_conversation_keeps_the_lease_past_the_normal_ttl() -> None:
    world = World()
    agent = world.agent(ScriptedModel([slow("after the wait", 500)]), lease_ttl=10)
    run = RunLoop(agent, "Approve the refund?", "c")
    subscribe(world, run)
    world.at(1, lambda: run.hold_conversation(3600))
    world.scheduler.advance_to(100)  # renewed every 10 / 3 s meanwhile, each time for 3600 s
    world.skew = 1000  # the process stalls: no renewal for 1000 s
    assert world.memory.try_acquire("c", "other", 10) is None
    world.skew = 0

    run.hold_conversation(None)  # back to lease_ttl: renewed now, for 10 s
    world.skew = 11
    other = world.memory.try_acquire("c", "other", 10)
    assert other is not None and run.lease is not None and other.token == run.lease.token + 1


def test_without_hold_conversation_the_lease_lapses_after_the_normal_ttl() -> None:
    world = World()
    agent = world.agent(ScriptedModel([slow("after the wait", 500)]), lease_ttl=10)
    run = RunLoop(agent, "Approve the refund?", "c")
    subscribe(world, run)
    world.scheduler.advance_to(100)
    world.skew = 11
    assert world.memory.try_acquire("c", "other", 10) is not None


def test_hold_conversation_is_a_no_op_without_a_lease() -> None:
    world = World()
    agent = world.agent(ScriptedModel([text_reply("a"), slow("b", 5)]))
    RunLoop(agent, "no conversation", None).hold_conversation(3600)
    waiting = RunLoop(agent, "queued", "c")
    holder = world.memory.try_acquire("c", "someone", 3)
    subscribe(world, waiting)
    world.scheduler.advance_to(1)
    waiting.hold_conversation(3600)  # still waiting for the lease: nothing to hold
    world.scheduler.advance_to(4)
    assert holder is not None and world.memory.renew(holder) is False
    assert waiting.lease is not None and waiting.lease.ttl == agent.lease_ttl


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan"), "1h", True])
def test_hold_conversation_refuses_a_ttl_that_is_no_duration(ttl: Any) -> None:
    world = World()
    run = RunLoop(world.agent(ScriptedModel([text_reply("a")])), "q", "c")
    with pytest.raises(InvalidArgumentError, match="ttl"):
        run.hold_conversation(ttl)


class FailingRenewals(InMemoryChatMemory):
    """Renewals fail once ``failing`` is set (the store went away)."""

    failing = False

    def renew(self, lease: Lease) -> bool:
        if self.failing:
            raise OSError("store unreachable")
        return super().renew(lease)


def test_hold_conversation_raises_when_the_store_cannot_renew() -> None:
    world = World()
    world.memory = FailingRenewals(clock=lambda: world.scheduler.clock)
    run = RunLoop(world.agent(ScriptedModel([slow("a", 100)])), "q", "c")
    subscribe(world, run)
    world.scheduler.advance_to(1)
    world.memory.failing = True
    with pytest.raises(ChatMemoryError, match="store unreachable"):
        run.hold_conversation(3600)
    world.scheduler.advance_to(10)  # the timers' renewals fail quietly, as before
