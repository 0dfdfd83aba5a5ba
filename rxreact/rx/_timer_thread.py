"""The one timer thread of the process: due callbacks from a heap, cancelled lazily.

Timed waits of every :class:`~rxreact.scheduling.ElasticScheduler` and the pools' stall
watches sleep here, so no pool thread is parked in a timed wait.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["TimerThread", "timer_thread"]


class TimerThread:
    """One daemon thread sleeping until the earliest due callback; callbacks must be quick
    (here they only submit to a pool)."""

    def __init__(self) -> None:
        # entries are [due, id, callback]; cancelling sets callback to None (lazy deletion)
        self._heap: list[list[Any]] = []
        self._ids = itertools.count()
        self._condition = threading.Condition()
        thread = threading.Thread(target=self._loop, name="rxreact-timers", daemon=True)
        thread.start()

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> list[Any]:
        """Call ``callback`` on the timer thread after ``seconds``; returns the entry
        (``[due, id, callback]``): setting its callback to ``None`` cancels it."""
        entry = [time.monotonic() + seconds, next(self._ids), callback]
        with self._condition:
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._condition.notify()
        return entry

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
            # A shut-down pool refuses work: then there is nothing to do for this timer.
            with contextlib.suppress(Exception):
                callback()


_timer_lock = threading.Lock()
_timer: TimerThread | None = None


def timer_thread() -> TimerThread:
    global _timer
    with _timer_lock:
        if _timer is None:
            _timer = TimerThread()
        return _timer
