"""Approval decisions through a shared log: from any process, applied once by the owner.

A tool call that waits for approval is in the run's log already: its
``tool_approval_requested`` event (call id, tool, arguments) and, once it is settled, its
``tool_result``. ``event_log.decide(run_id, call_id, approved, reason)`` checks the call
waits (requested, no result yet, the run not ended), then records the decision where the
first one wins atomically (a SQLite row with a unique key, a Redis ``HSETNX``) and tells
the owner, whose reader applies it to the waiting call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from reactivex import abc

from rxreact.errors import ApprovalDecisionError
from rxreact.events import AgentEvent, ToolApprovalRequested, ToolResult

__all__ = ["Appliers", "Apply", "Decision", "check_waiting", "decision_error"]

Apply = Callable[[str, bool, str | None], None]
"""How an owner applies a decision to its run: ``apply(call_id, approved, reason)``."""


class Decision(NamedTuple):
    """A decision as a log's reader read it, checked: the log may hold anything anyone wrote."""

    run_id: str
    call_id: str
    approved: bool
    reason: str | None

    @classmethod
    def checked(cls, run_id: Any, call_id: Any, approved: Any, reason: Any) -> Decision | None:
        """The decision of a SQLite row, or ``None`` when a field has another type (a text
        ``approved`` must not read as true)."""
        if not (isinstance(run_id, str) and isinstance(call_id, str)):
            return None
        if type(approved) is not int or approved not in (0, 1):
            return None
        if reason is not None and not isinstance(reason, str):
            return None
        return cls(run_id, call_id, approved == 1, reason)

    @classmethod
    def of_fields(cls, fields: Mapping[bytes, bytes]) -> Decision | None:
        """The decision of a Redis stream entry (fields ``run``, ``call``, ``approved`` as
        ``1``/``0``, ``reason``), or ``None`` when it has another shape."""
        try:
            text = {k.decode(): v.decode() for k, v in fields.items()}
        except (AttributeError, UnicodeDecodeError):
            return None
        approved = {"1": 1, "0": 0}.get(text.get("approved", ""))
        return cls.checked(text.get("run"), text.get("call"), approved, text.get("reason") or None)


class Appliers:
    """How each run this process owns applies a decision, by run id: the log's reader hands
    every decision it reads to :meth:`decided`, which applies those of owned runs.

    A decision is applied on ``scheduler``, not on the reader's thread: it resumes a tool
    call, which must not hold up the reading of other runs' entries.
    """

    def __init__(self, scheduler: abc.SchedulerBase) -> None:
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._by_run: dict[str, Apply] = {}

    def watch(self, run_id: str, apply: Apply) -> None:
        """Apply the decisions read for ``run_id`` with ``apply`` from now on."""
        with self._lock:
            self._by_run[run_id] = apply

    def forget(self, run_id: str) -> None:
        """The run ended here: its late decisions are nobody's to apply."""
        with self._lock:
            self._by_run.pop(run_id, None)

    def decided(self, run_id: str, call_id: str, approved: bool, reason: str | None) -> None:
        """A decision the reader read: applied if this process owns ``run_id``."""
        with self._lock:
            apply = self._by_run.get(run_id)
        if apply is not None:

            def action(_: abc.SchedulerBase, __: Any = None) -> None:
                apply(call_id, approved, reason)

            self._scheduler.schedule(action)


def check_waiting(run_id: str, call_id: str, events: Iterable[AgentEvent]) -> None:
    """Raise :class:`~rxreact.ApprovalDecisionError` unless ``call_id`` of the run asked for
    approval and has no result yet."""
    asked = settled = False
    for event in events:
        if type(event) is ToolApprovalRequested and event.call_id == call_id:
            asked = True
        elif type(event) is ToolResult and event.call_id == call_id:
            settled = True
    if not asked:
        raise decision_error(run_id, call_id, "no such call asked for approval")
    if settled:
        raise decision_error(run_id, call_id, "the call was settled already")


def decision_error(run_id: str, call_id: str, why: str) -> ApprovalDecisionError:
    return ApprovalDecisionError(f"cannot decide call {call_id!r} of run {run_id!r}: {why}")
