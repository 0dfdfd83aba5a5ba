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

_COMPACT_EVERY = 512  # dequeues between two looks at the queue
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
        taken = 0
        try:
            while True:
                with self._lock:
                    if not self._is_enabled or not self._queue:
                        break
                    taken += 1
                    if not taken % _COMPACT_EVERY:
                        self._compact()
                        if not self._queue:
                            break
                    item = self._queue.dequeue()
                    if item.duetime > self.now:
                        self._clock = self.to_seconds(item.duetime)
                if not item.is_cancelled():
                    item.invoke()
        finally:
            self.stop()

    def _compact(self) -> None:
        """Drop cancelled actions from the queue: every run leaves some (its stall watchdog,
        its tools' timeouts), and a heap of thousands of them makes every step slower."""
        queue = self._queue
        if len(queue) > _COMPACT_FROM:
            queue.items = [entry for entry in queue.items if not entry[0].is_cancelled()]
            heapq.heapify(queue.items)

    def seconds(self) -> float:
        """The virtual clock, in seconds."""
        return self.to_seconds(self._clock)
