"""``InMemoryEventLog``: hot runs shared within one process (the default event log)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

import reactivex
from reactivex import Observable, abc

from rxreact.errors import RunNotFoundError
from rxreact.events import AgentEvent
from rxreact.runs._record import RunRecord
from rxreact.runs.base import RunWriter
from rxreact.scheduling import shared_scheduler

__all__ = ["InMemoryEventLog"]


class InMemoryEventLog:
    """Runs' events in this process's memory: replay, live following, bounded retention.

    Running runs are always kept. A finished run stays readable for ``ttl`` seconds and among
    the last ``max_runs`` finished ones, whichever ends first (then ``follow`` says
    :class:`~rxreact.RunNotFoundError`). Subscribers read from the run's one list of events
    at their own pace; none of them ever holds the run back.

    Args:
        max_runs: finished runs kept.
        ttl: seconds a finished run is kept (``None``: until ``max_runs`` pushes it out).
        scheduler: where subscribers receive events when they subscribe without a scheduler
            (default: a shared pool). ``run.events()`` uses the agent's scheduler.
    """

    def __init__(
        self,
        *,
        max_runs: int = 1000,
        ttl: float | None = 3600.0,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        if max_runs < 0:
            raise ValueError("max_runs must not be negative")
        self.max_runs = max_runs
        self.ttl = ttl
        self.scheduler: abc.SchedulerBase = scheduler or shared_scheduler("agent", 8)
        self._lock = threading.Lock()
        self._runs: dict[str, RunRecord] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()  # run id -> end time, oldest first
        self._active: dict[str, list[str]] = {}  # conversation id -> running runs, oldest first

    def __repr__(self) -> str:
        return f"InMemoryEventLog(max_runs={self.max_runs}, ttl={self.ttl})"

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run of this process; its record is the writer."""
        return self._record(run_id, conversation_id, cancel)

    def _record(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None] | None
    ) -> RunRecord:
        """:meth:`begin`, returning the record itself (for logs built on this one)."""
        record = RunRecord(run_id, conversation_id, cancel, self._ended)
        with self._lock:
            self._expire()
            if run_id in self._runs:
                raise ValueError(f"run {run_id!r} is already in the log")
            self._runs[run_id] = record
            if conversation_id is not None:
                self._active.setdefault(conversation_id, []).append(run_id)
        return record

    def _get(self, run_id: str) -> RunRecord | None:
        """The run's record, if it is kept here."""
        with self._lock:
            self._expire()
            return self._runs.get(run_id)

    def read(self, run_id: str, after: int = 0) -> Observable[AgentEvent]:
        """Replay ``seq > after``, follow live, end as the run ended (see :class:`EventLog`)."""
        record = self._get(run_id)
        if record is None:
            return reactivex.throw(RunNotFoundError(f"no run {run_id!r} in this event log"))
        return record.read(after, self.scheduler)

    def active_run(self, conversation_id: str) -> str | None:
        """The oldest running run on ``conversation_id``, or ``None``."""
        with self._lock:
            running = self._active.get(conversation_id)
            return running[0] if running else None

    def request_cancel(self, run_id: str) -> None:
        """Cancel the run if it is still running here (no-op otherwise)."""
        record = self._get(run_id)
        if record is not None and not record.ended and record.cancel is not None:
            record.cancel()

    def _ended(self, record: RunRecord) -> None:
        with self._lock:
            conversation = record.conversation_id
            running = self._active.get(conversation) if conversation is not None else None
            if running is not None and conversation is not None:
                running.remove(record.run_id)
                if not running:
                    del self._active[conversation]
            if record.run_id in self._runs:
                self._finished[record.run_id] = time.monotonic()
            self._expire()

    def _expire(self) -> None:
        """Forget finished runs beyond ``max_runs`` or older than ``ttl`` (lock held)."""
        finished = self._finished
        while len(finished) > self.max_runs:
            run_id, _ = finished.popitem(last=False)
            self._runs.pop(run_id, None)
        if self.ttl is None:
            return
        horizon = time.monotonic() - self.ttl
        while finished:
            run_id, ended_at = next(iter(finished.items()))
            if ended_at > horizon:
                break
            del finished[run_id]
            self._runs.pop(run_id, None)
