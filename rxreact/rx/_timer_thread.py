"""The one timer thread of the process: due callbacks from a heap, cancelled lazily.

Timed waits of every :class:`~rxreact.scheduling.ElasticScheduler` and the pools' stall
watches sleep here, so no pool thread is parked in a timed wait.

A cancelled entry stays in the heap until it would have been due (removing it from the middle
of a heap costs a search): most timers are cancelled (a 60-second tool timeout whose tool
answered in 50 ms), so at thousands of runs the heap would be mostly dead entries, each one
more object for every garbage collection to walk. So the heap is rebuilt without them once
they are more than half of it (and more than :data:`COMPACT_AT`): linear work, made at most
once per that many cancellations.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["COMPACT_AT", "TimerThread", "timer_thread"]

COMPACT_AT = 1024
"""Cancelled entries below which the heap is never rebuilt."""


class TimerThread:
    """One daemon thread sleeping until the earliest due callback; callbacks must be quick
    (here they only submit to a pool)."""

    def __init__(self) -> None:
        # entries are [due, id, callback]; cancelling sets callback to None (lazy deletion)
        self._heap: list[list[Any]] = []
        self._cancelled = 0  # entries cancelled since the last rebuild (approximate: no lock)
        self._ids = itertools.count()
        self._condition = threading.Condition()
        thread = threading.Thread(target=self._loop, name="rxreact-timers", daemon=True)
        thread.start()

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> list[Any]:
        """Call ``callback`` on the timer thread after ``seconds``; returns the entry
        (``[due, id, callback]``): setting its callback to ``None`` cancels it."""
        entry = [time.monotonic() + seconds, next(self._ids), callback]
        with self._condition:
            if self._cancelled > COMPACT_AT and self._cancelled * 2 > len(self._heap):
                self._compact()
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._condition.notify()
        return entry

    def cancel(self, entry: list[Any]) -> None:
        """Cancel the entry :meth:`call_later` returned (from any thread; no lock: the timer
        thread skips an entry whose callback is ``None``)."""
        if entry[2] is not None:
            entry[2] = None
            self._cancelled += 1

    @property
    def pending(self) -> int:
        """Entries in the heap, cancelled ones included (for tests and probes)."""
        return len(self._heap)

    def _compact(self) -> None:
        """Rebuild the heap without cancelled entries (the condition's lock is held)."""
        self._heap = [entry for entry in self._heap if entry[2] is not None]
        heapq.heapify(self._heap)
        self._cancelled = 0

    def _loop(self) -> None:
        while True:
            with self._condition:
                while True:
                    if not self._heap:
                        self._condition.wait()
                        continue
                    entry = self._heap[0]
                    delay = entry[0] - time.monotonic()
                    if entry[2] is not None and delay > 0:
                        self._condition.wait(delay)
                        continue
                    heapq.heappop(self._heap)
                    callback = entry[2]
                    if callback is not None:
                        break
                    self._cancelled = max(0, self._cancelled - 1)
            # A shut-down pool refuses work: then there is nothing to do for this timer.
            with contextlib.suppress(Exception):
                callback()


_timer_lock = threading.Lock()
_timer: TimerThread | None = None


def timer_thread() -> TimerThread:
    """The process's timer thread, started on first use."""
    global _timer
    timer = _timer
    if timer is not None:  # no lock once it exists: this is called at every dispose
        return timer
    with _timer_lock:
        if _timer is None:
            _timer = TimerThread()
        return _timer
