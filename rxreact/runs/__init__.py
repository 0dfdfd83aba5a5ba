"""Hot runs: share, replay, resume, and follow from another process.

``agent.start(question)`` starts a run at once and returns an :class:`AgentRun`. Its events,
numbered by ``seq``, go to the agent's :class:`EventLog`; every subscriber is a cursor on that
log (replay ``seq > after``, then live), so a second viewer, a late subscriber, a reconnecting
client and a follower in another process are one mechanism. A disconnect detaches a cursor;
only :meth:`AgentRun.cancel` stops the run.
"""

from __future__ import annotations

from reactivex import Observable

from rxreact.events import AgentEvent
from rxreact.runs.base import EventLog, RunWriter
from rxreact.runs.handle import AgentRun
from rxreact.runs.memory import InMemoryEventLog
from rxreact.runs.postgres import PostgresEventLog
from rxreact.runs.redis import RedisEventLog
from rxreact.runs.sqlite import SQLiteEventLog

__all__ = [
    "AgentRun",
    "EventLog",
    "InMemoryEventLog",
    "PostgresEventLog",
    "RedisEventLog",
    "RunWriter",
    "SQLiteEventLog",
    "follow",
]


def follow(run_id: str, event_log: EventLog, after: int = 0) -> Observable[AgentEvent]:
    """The events of run ``run_id`` with ``seq > after``, then live: ``run.events(after)`` for
    a run this code did not start (another request handler, another process with the same
    Redis).

    ::

        run (elsewhere):   -1-2-3-4-F|
        follow(id, log):   (123)-4-F|          subscribed after 3

    Completes after ``final_answer``; errors with the run's error (the same exception type,
    across processes) or :class:`~rxreact.RunNotFoundError`. Disposing detaches only this
    subscriber.
    """
    return event_log.read(run_id, after)
