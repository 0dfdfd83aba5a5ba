""":class:`EvalScheduler`: the ``TestScheduler`` an evaluation in virtual time runs on.

``VirtualTimeScheduler.start`` moves the clock on by one second after a hundred actions due at
the same instant (a guard against actions that reschedule themselves forever). Many runs in
flight at once easily schedule that many at one instant, and their timings would drift by
whole seconds; :meth:`EvalScheduler.drain` runs the same queue without that rule, so every
time in a report is exactly the scripted one.
"""

from __future__ import annotations

import heapq

from reactivex.testing import TestScheduler

__all__ = ["EvalScheduler"]

_COMPACT_FROM = 128  # queued actions from which cancelled ones are dropped


class EvalScheduler(TestScheduler):
    """A ``TestScheduler`` (give it to ``ReactAgent(scheduler=...)``) with :meth:`drain`."""

    def drain(self) -> None:
        """Run every scheduled action, in due-time order, until none is left (or
        :meth:`stop`); the clock only moves to an action's due time."""
        with self._lock:
            if self._is_enabled:
                return
            self._is_enabled = True
        # The queue is compacted each time it doubles from its size after the last compaction:
        # linear in all, however many runs are in flight.
        limit = _COMPACT_FROM
        now = self.now  # as a datetime, which due times are: converted when it moves only
        try:
            while True:
                with self._lock:
                    if len(self._queue) >= limit:
                        limit = max(_COMPACT_FROM, 2 * self._compact())
                    if not self._is_enabled or not self._queue:
                        break
                    item = self._queue.dequeue()
                    if item.duetime > now:
                        now = item.duetime
                        self._clock = self.to_seconds(now)
                if not item.is_cancelled():
                    item.invoke()
        finally:
            self.stop()

    def _compact(self) -> int:
        """Drop cancelled actions from the queue (every run leaves some: its stall watchdog,
        its tools' timeouts; a heap of thousands of them makes every step slower); returns
        the number left."""
        queue = self._queue
        queue.items = [entry for entry in queue.items if not entry[0].is_cancelled()]
        heapq.heapify(queue.items)
        return len(queue.items)

    def seconds(self) -> float:
        """The virtual clock, in seconds."""
        return self.to_seconds(self._clock)
