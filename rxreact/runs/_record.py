"""One run's events in this process, and the cursors that follow it at their own pace.

The record is the only buffer: a cursor holds a position in it, never a copy of events, so a
slow subscriber costs one integer however far behind it is, and the run never waits for it.
The run's ``append`` only wakes cursors that are idle (caught up); a cursor that is behind is
already draining and will see the new events without being told.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import Disposable

from rxreact.events import AgentEvent

__all__ = ["RunRecord"]

_BATCH = 256
"""Events a cursor delivers per scheduled action before it yields its thread to others."""


class RunRecord:
    """Events of one run (index ``i`` holds ``seq`` ``i + 1``), its end, its idle cursors."""

    __slots__ = (
        "_idle",
        "_lock",
        "_on_end",
        "cancel",
        "conversation_id",
        "ended",
        "error",
        "events",
        "run_id",
    )

    def __init__(
        self,
        run_id: str,
        conversation_id: str | None,
        cancel: Callable[[], None] | None,
        on_end: Callable[[RunRecord], None] | None = None,
    ) -> None:
        self.run_id: str = run_id
        self.conversation_id: str | None = conversation_id
        self.cancel: Callable[[], None] | None = cancel
        self.events: list[AgentEvent] = []
        self.ended: bool = False
        self.error: Exception | None = None
        self._lock = threading.Lock()
        self._idle: list[_Cursor] = []
        self._on_end = on_end

    # -- the writer's side (RunWriter) ------------------------------------------------------

    def append(self, event: AgentEvent) -> None:
        """Add the next event and wake the cursors that were waiting for one."""
        with self._lock:
            if self.ended:
                return  # a late event after cancel(): the run is over for its subscribers
            self.events.append(event)
            if not self._idle:
                return
            waiting, self._idle = self._idle, []
        for cursor in waiting:
            cursor.schedule()

    def end(self, error: Exception | None = None) -> None:
        """Mark the run ended (completed, or with ``error``); idempotent."""
        with self._lock:
            if self.ended:
                return
            self.ended, self.error = True, error
            waiting, self._idle = self._idle, []
        for cursor in waiting:
            cursor.schedule()
        if self._on_end is not None:
            self._on_end(self)

    # -- the readers' side -------------------------------------------------------------------

    def read(self, after: int, default_scheduler: abc.SchedulerBase) -> Observable[AgentEvent]:
        """Replay ``seq > after``, follow live, end as the run ended; on the subscribe-time
        scheduler (or ``default_scheduler``)."""

        def subscribe(
            observer: abc.ObserverBase[AgentEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            cursor = _Cursor(self, max(after, 0), observer, scheduler or default_scheduler)
            cursor.schedule()
            return Disposable(cursor.dispose)

        return Observable(subscribe)

    def _park(self, cursor: _Cursor) -> bool:
        """Make ``cursor`` idle unless there is more to read or the run ended (then False)."""
        with self._lock:
            if cursor.position < len(self.events) or self.ended:
                return False
            self._idle.append(cursor)
            return True

    def _unpark(self, cursor: _Cursor) -> None:
        with self._lock:
            if cursor in self._idle:
                self._idle.remove(cursor)


class _Cursor:
    """A subscriber's position in a record; drains on its scheduler, one action at a time."""

    __slots__ = ("_observer", "_record", "_scheduler", "disposed", "position")

    def __init__(
        self,
        record: RunRecord,
        position: int,
        observer: abc.ObserverBase[AgentEvent],
        scheduler: abc.SchedulerBase,
    ) -> None:
        self._record = record
        self.position = position
        self._observer = observer
        self._scheduler = scheduler
        self.disposed = False

    def schedule(self) -> None:
        # Called only by the subscriber (once) and by whoever took it off the idle list, so at
        # most one drain is pending or running at a time. The scheduled action is not kept to
        # be disposed: a drain that runs after dispose() returns at once. (Keeping it in a
        # SerialDisposable would lose wake-ups: a late assignment from the subscribing thread
        # would dispose a drain the producer had just scheduled.)
        if not self.disposed:
            self._scheduler.schedule(self._drain)

    def dispose(self) -> None:
        self.disposed = True
        self._record._unpark(self)

    def _drain(self, _: abc.SchedulerBase, __: Any = None) -> None:
        record, observer = self._record, self._observer
        events = record.events
        while not self.disposed:
            end = min(len(events), self.position + _BATCH)
            if self.position < end:
                batch = events[self.position : end]
                for event in batch:
                    if self.disposed:
                        return
                    self.position += 1
                    try:
                        observer.on_next(event)
                    except Exception as error:
                        # The subscriber raised: this follower ends with it (the run goes on,
                        # as when a follower disposes). Escaping, it would stop this drain for
                        # good on a pool thread, and the follower would wait forever.
                        self.dispose()
                        observer.on_error(error)
                        return
                if len(batch) == _BATCH:
                    # A long replay: let other actions on this scheduler run, then go on.
                    self.schedule()
                    return
                continue
            if record._park(self):
                return
            if self.position < len(events):
                continue  # appended between the read and the park
            self.disposed = True
            if record.error is not None:
                observer.on_error(record.error)
            else:
                observer.on_completed()
            return
