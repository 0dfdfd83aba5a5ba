"""Taking over a lost run: what a durable log hands the process that claims it.

A run's owner keeps a **run lease** in the log (its heartbeat). When the lease lapses for
``lost_after`` seconds, the run is lost, and any process may claim it: the claim is atomic in
the log and bumps the run's fencing token, so of two workers racing for one run exactly one
gets it, and the old owner (if it was only paused) finds every later write refused.

The winner gets a :class:`LostRun`: the run's checkpoints and the events its followers have
already seen, from which ``agent.resume_runs()`` (:mod:`rxreact.agent.resume`) rebuilds the
run and goes on with ``seq`` where the log stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from rxreact.events import AgentEvent, FinalAnswer
from rxreact.runs.base import RunWriter

__all__ = ["LostRun", "ResumableLog"]


@dataclass(frozen=True)
class LostRun:
    """A run this process just claimed."""

    run_id: str
    conversation_id: str | None
    token: int
    """The fencing token of this claim (one more than the last owner's)."""
    checkpoints: list[tuple[str, bytes]] = field(default_factory=list)
    """``(label, body)`` of each checkpoint, in the order they were written."""
    events: list[AgentEvent] = field(default_factory=list)
    """The events committed so far, ``seq`` 1 to :attr:`last_seq`."""
    error: str | None = None
    """Why the log could not read the run back (then it is not resumable)."""
    parked: bool = False
    """The run was parked (:mod:`rxreact.runs.parking`): its calls waiting for approval
    never began."""
    deadline: float | None = None
    """A parked run's approval deadline (wall clock): calls undecided by then are denied."""
    decisions: dict[str, tuple[bool, str | None]] = field(default_factory=dict)
    """The approval decisions recorded for the run: call id -> ``(approved, reason)``."""

    @property
    def last_seq(self) -> int:
        return len(self.events)

    @property
    def final_answer(self) -> FinalAnswer | None:
        """The run's own ``final_answer`` if it is among the committed events: the owner died
        after answering, before the end marker (its memory commit comes before the event, so
        there is nothing left to do but end)."""
        for event in reversed(self.events):
            if type(event) is FinalAnswer and not event.path:
                return event
        return None


@runtime_checkable
class ResumableLog(Protocol):
    """An event log that can hand lost runs to another process (SQLite, Redis)."""

    lost_after: float

    def claim_lost(self, limit: int = 100) -> list[LostRun]:
        """Claim up to ``limit`` runs whose owner stopped beating ``lost_after`` ago."""
        ...

    def resume(self, lost: LostRun, cancel: Callable[[], None]) -> RunWriter:
        """Own a claimed run from now on: its writer continues after ``lost.last_seq``."""
        ...

    def give_up(self, lost: LostRun, reason: str) -> None:
        """Mark a claimed run lost for good: its followers get ``RunLostError(reason)``."""
        ...
