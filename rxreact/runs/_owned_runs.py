"""What the SQL event logs (:class:`~rxreact.runs.SQLiteEventLog`,
:class:`~rxreact.runs.PostgresEventLog`) do the same way: the runs this process owns.

A log keeps its own runs in memory (:class:`~rxreact.runs.memory.InMemoryEventLog`: the
subscribers of this process are served from there) beside a fence per run (owner and token,
checked by every write), and follows other processes' runs through its reader thread. What
touches the store (begin, claim, heartbeat, retention, cancel and decision rows, close) is
each log's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from rxreact._closeable import Closeable
from rxreact.errors import RunError
from rxreact.events import AgentEvent
from rxreact.runs._decisions import Appliers, Apply
from rxreact.runs._follower import Follower
from rxreact.runs._record import RunRecord
from rxreact.runs._write_queue import Fence, QueuedRunWriter, WriteQueue
from rxreact.runs.base import RunWriter
from rxreact.runs.memory import InMemoryEventLog
from rxreact.runs.takeover import LostRun

__all__ = ["OwnedRuns", "positive"]


def positive(value: float, name: str) -> float:
    """``value`` as a float, or the ValueError that says ``name`` must be positive."""
    if value <= 0:
        raise ValueError(f"{name} must be positive")
    return float(value)


class _Reader(Protocol):
    """A log's reader thread (SQLite's, Postgres's)."""

    def ensure_started(self) -> None: ...

    def add(self, follower: Follower) -> None: ...

    def remove(self, follower: Follower) -> None: ...

    def wake(self) -> None: ...

    def close(self) -> None: ...


class OwnedRuns(Closeable):
    """The runs of this process in a SQL event log; a log sets the attributes below."""

    _writer: ClassVar[type[QueuedRunWriter]]
    """The log's run writer."""
    owner: str
    """This log's identity as a runs' owner (one per log object)."""
    lost_after: float
    """Seconds without a heartbeat after which a run's owner counts as gone."""
    takeover_timeout: float
    """Seconds after that for another process to resume a run before its followers give up."""
    ttl: float
    """Seconds a finished run stays readable."""
    _local: InMemoryEventLog
    _lock: threading.Lock
    _owned: dict[str, tuple[RunRecord, Fence]]
    _writes: WriteQueue
    _appliers: Appliers
    _reader: _Reader

    def _set_times(self, lost_after: float, takeover_timeout: float, ttl: float) -> None:
        """Check and set the log's three times (called first by its ``__init__``)."""
        self.lost_after = positive(lost_after, "lost_after")
        if takeover_timeout < 0:
            raise ValueError("takeover_timeout must not be negative")
        self.takeover_timeout = float(takeover_timeout)
        self.ttl = positive(ttl, "ttl")

    def _keep_runs(
        self, writes: WriteQueue, max_runs: int, ttl: float, scheduler: abc.SchedulerBase | None
    ) -> None:
        """Set up the runs of this process (called by the log's ``__init__``)."""
        self._local = InMemoryEventLog(max_runs=max_runs, ttl=ttl, scheduler=scheduler)
        self._lock = threading.Lock()
        self._owned = {}
        self._writes = writes
        self._appliers = Appliers(writes.scheduler)

    def _begin(
        self,
        run_id: str,
        conversation_id: str | None,
        cancel: Callable[[], None],
        insert: Callable[[], None],
    ) -> RunWriter:
        """Register a run of this process: ``insert()`` writes its row (token 1); a
        :class:`RunError` from it ends the run's record here too."""
        record = self._local._record(run_id, conversation_id, cancel)
        try:
            self._reader.ensure_started()  # cancel requests for this run are seen from now on
            insert()
        except RunError as error:
            record.end(error)
            raise
        return self._own(record, 1, 0, 0)

    def _own(
        self, record: RunRecord, token: int, last_seq: int, checkpoints: int
    ) -> QueuedRunWriter:
        fence = Fence(record.run_id, self.owner, token, self._fenced(record.run_id))
        fence.last_seq, fence.checkpoints = last_seq, checkpoints
        with self._lock:
            self._owned[record.run_id] = (record, fence)
        return self._writer(self._writes, record, fence, self._ended)

    def resume(self, lost: LostRun, cancel: Callable[[], None]) -> RunWriter:
        """Own a claimed run: its writer continues after ``lost.last_seq``, and subscribers
        here replay its events from the start."""
        record = self._local._record(lost.run_id, lost.conversation_id, cancel)
        record.events.extend(lost.events)
        writer = self._own(record, lost.token, lost.last_seq, len(lost.checkpoints))
        writer.parked = lost.parked  # the store still says so: unparked before anything runs
        return writer

    def _fenced(self, run_id: str) -> Callable[[], None]:
        def stop() -> None:
            self._cancel_here(run_id)

        return stop

    def _ended(self, record: RunRecord) -> None:
        with self._lock:
            self._owned.pop(record.run_id, None)
        self._appliers.forget(record.run_id)

    def _owned_tokens(self) -> tuple[list[str], list[int]]:
        """The runs this process owns and their tokens, in run id order."""
        with self._lock:
            owned = sorted((f.run_id, f.token) for _, f in self._owned.values())
        return [run_id for run_id, _ in owned], [token for _, token in owned]

    def _cancel_here(self, run_id: str) -> bool:
        """Cancel the run if this process owns it (True), on the caller's thread."""
        with self._lock:
            owned = self._owned.get(run_id)
        if owned is None or owned[0].cancel is None:
            return False
        owned[0].cancel()
        return True

    def _cancel_requested(self, run_id: str) -> None:
        """Another process asked to cancel ``run_id`` (called by the reader thread)."""

        # Not on the reader thread: cancelling closes HTTP streams and tells tools.
        def action(_: abc.SchedulerBase, __: Any = None) -> None:
            self._cancel_here(run_id)

        with self._lock:
            owned = run_id in self._owned
        if owned:
            self._writes.scheduler.schedule(action)

    def _flush_if_owned(self, run_id: str) -> None:
        """Before a decision: the approval request of a run of ours may still be on its way."""
        with self._lock:
            owned = run_id in self._owned
        if owned:
            self.flush()

    # -- anyone's side ------------------------------------------------------------------------

    def read(self, run_id: str, after: int = 0) -> Observable[AgentEvent]:
        """Replay ``seq > after``, follow live, end as the run ended (see :class:`EventLog`);
        from this process's memory for its own runs, else from the store."""
        record = self._local._get(run_id)
        if record is not None:
            return record.read(after, self._local.scheduler)
        default = self._local.scheduler

        def subscribe(
            observer: abc.ObserverBase[AgentEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            follower = Follower(self._reader, run_id, max(after, 0), observer, scheduler or default)
            try:
                self._reader.add(follower)
            except RunError as error:
                observer.on_error(error)
            return Disposable(follower.dispose)

        return Observable(subscribe)

    def watch_decisions(self, run_id: str, apply: Apply) -> None:
        """How this process's run ``run_id`` applies decisions (its handle registers it)."""
        self._appliers.watch(run_id, apply)

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every event appended so far was committed; False on timeout."""
        return self._writes.wait_sent(timeout)
