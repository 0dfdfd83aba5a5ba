"""Parked runs: a run that waits only for people's approvals needs no process.

On a durable log, a hot run whose every unfinished tool call waits for a decision
(``tool_approval_requested``, nothing running) is **parked** in the log::

    events:  ... call_started(a) call_started(b) ... result(a) approval_requested(b)
    log:     running ................................................ parked(since, deadline)
    decide(b), from any process:
        owner alive -> it unparks the run (committed), then b runs
        owner gone  -> the next resume_runs() of any worker claims it, then b runs

While parked the run holds no thread, connection or timer of its own; its process may stop
(a deploy, a crash) without losing it: the log neither counts it lost nor fails its followers,
and its conversation stays taken (``active_run`` names it). A decision made while no process
holds it is recorded, and the next ``resume_runs()`` of any worker claims the run and applies
it; so does the approval deadline (``approval_timeout``), which denies what was not decided.

**Unpark before anything runs.** The log says "parked" only while nothing happened since the
park: the owner commits the unpark before it applies a decision, and before any later event of
the run is written. So a process that claims a run still parked knows its waiting calls never
began, and applies their recorded decisions itself; none runs twice.

The conversation stays leased meanwhile (``RunLoop.hold_conversation``), for
:data:`PARKED_LEASE_TTL` or until the deadline, and its next owner takes the lease over.

Only runs whose approvals come from outside (a handle's ``approve``/``deny``,
``event_log.decide``) park: an agent's ``approver=`` callback lives in its process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from rxreact.events import (
    Handoff,
    ToolApprovalRequested,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)

__all__ = ["PARKED_LEASE_TTL", "ParkWatch", "ParkingWriter"]

PARKED_LEASE_TTL = 7 * 24 * 3600.0
"""Seconds a parked run without a deadline keeps its conversation leased (a week); with
``approval_timeout``, until its deadline plus ``lease_ttl``. Past that, another run may take
the conversation, and the parked run, once decided, waits its turn for it."""

_TOOL_EVENTS = frozenset(
    {ToolCallStarted, ToolApprovalRequested, ToolExecutionStarted, ToolResult, Handoff}
)


@runtime_checkable
class ParkingWriter(Protocol):
    """A durable log's run writer that can park its run."""

    @property
    def parked(self) -> bool:
        """True from :meth:`park` until the run goes on."""
        ...

    def park(self, deadline: float | None) -> None:
        """Park the run right after the next event (the one that leaves it waiting only for
        approvals), until ``deadline`` (wall clock; ``None``: no deadline). The park is
        written in the same batch as that event, and queued before the event reaches any
        subscriber here: a follower in another process that reads the event, or one here
        that saw it and flushes the log, knows the park is written."""
        ...

    def unpark(self, on_sent: Callable[[bool], None]) -> None:
        """Queue "running again" if parked, and wait for an unpark already on its way;
        ``on_sent(written)`` once it was written, or refused (another process owns the run
        now); at once (True) when there is nothing to wait for."""
        ...


class ParkWatch:
    """Tells, from a root run's events, when every unfinished tool call waits for approval.

    Only tool events are looked at (the per-chunk path pays one set lookup)::

        tool_call_started a, b   unfinished {a, b}  waiting {}
        tool_result a            unfinished {b}     waiting {}
        approval_requested b     unfinished {b}     waiting {b}   -> park
        execution_started b      unfinished {b}     waiting {}
    """

    __slots__ = ("_handed_off", "_unfinished", "_waiting")

    def __init__(self) -> None:
        self._unfinished: set[str] = set()
        self._waiting: set[str] = set()
        self._handed_off = False  # a handed-off run cannot be resumed elsewhere: never parks

    def see(self, event: Any) -> bool:
        """Note ``event``; True when the run should park now."""
        kind = type(event)
        if kind not in _TOOL_EVENTS or event.path:  # an agent tool's own calls are inside ours
            return False
        if kind is Handoff:
            self._handed_off = True
            return False
        call_id: str = event.call_id
        if kind is ToolCallStarted:
            self._unfinished.add(call_id)
        elif kind is ToolApprovalRequested:
            self._unfinished.add(call_id)
            self._waiting.add(call_id)
            return self._waiting == self._unfinished and not self._handed_off
        elif kind is ToolExecutionStarted:
            self._waiting.discard(call_id)
        else:
            self._unfinished.discard(call_id)
            self._waiting.discard(call_id)
            waiting = bool(self._waiting) and self._waiting == self._unfinished
            return waiting and not self._handed_off
        return False
