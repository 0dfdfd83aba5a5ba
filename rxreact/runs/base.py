"""The ``EventLog`` protocol: where a hot run's events are kept for its subscribers.

A run appends its events in ``seq`` order and then one end marker (completed, or the error
that ended it). A subscriber is a cursor on that log: it replays the events with
``seq > after``, follows live, and ends with the end marker. Sharing a run, late subscribers,
reconnecting clients and followers in other processes are all that one mechanism.

Implementations: :class:`~rxreact.runs.InMemoryEventLog` (one process, the default) and
:class:`~rxreact.runs.RedisEventLog` (many processes and machines). To write your own, keep:

- ``append`` never blocks the run on a subscriber or on I/O (queue and write in batches);
- a subscriber reads at its own pace from the log, so a slow one holds only its cursor;
- finished runs are kept for a bounded time or number (retention), running ones always.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from reactivex import Observable

from rxreact.events import AgentEvent

__all__ = ["EventLog", "RunWriter"]


class RunWriter(Protocol):
    """The owning process's side of one run in an :class:`EventLog`."""

    def append(self, event: AgentEvent) -> None:
        """Add the next event (``event.seq`` is one more than the last); never blocks on I/O.

        Calls are serialized (the run's output observer makes them).
        """
        ...

    def end(self, error: Exception | None = None) -> None:
        """Write the end marker: completed (``None``) or failed with ``error``; idempotent."""
        ...


@runtime_checkable
class EventLog(Protocol):
    """Keeps the events of hot runs (``agent.start``) for any number of subscribers."""

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run this process owns; ``cancel`` is called on :meth:`request_cancel`."""
        ...

    def read(self, run_id: str, after: int = 0) -> Observable[AgentEvent]:
        """The run's events with ``seq > after``, then live ones, then its end.

        Completes after ``final_answer``; errors with the run's error (the same
        :class:`~rxreact.RxReactError` type), or :class:`~rxreact.RunNotFoundError` for an
        unknown run. Disposing detaches only this subscriber.
        """
        ...

    def active_run(self, conversation_id: str) -> str | None:
        """The id of the run in progress on ``conversation_id`` (the oldest, if several)."""
        ...

    def request_cancel(self, run_id: str) -> None:
        """Ask the run's owner (this process or another) to cancel it; no-op once it ended."""
        ...
