"""``ChaosScheduler``: a thread pool that preempts the thread that schedules.

Most RxPY operators chain work as ``disposable = scheduler.schedule(action)``. On a real thread
pool the action may run, finish and schedule its own successor before ``schedule`` has even
returned to the thread that called it; code that is only correct when the scheduling thread
wins that race fails once in thousands of runs, in production. This scheduler makes the
losing interleaving common: after handing an action to the pool it holds the scheduling
thread back for a random moment, as a preempted thread would be, so the action (and what it
schedules in turn) usually runs first. Run many agent runs on it and count the ones that
never end.
"""

from __future__ import annotations

import random
import threading
import time
from typing import TypeVar

from reactivex import abc, typing

from rxreact.scheduling import ElasticScheduler

__all__ = ["ChaosScheduler"]

_TState = TypeVar("_TState")


class ChaosScheduler(ElasticScheduler):
    """An :class:`~rxreact.scheduling.ElasticScheduler` that preempts its callers at random.

    Args:
        max_workers: pool size.
        preempt: the share of ``schedule`` calls after which the calling thread is held back.
        max_pause: the longest hold, in seconds.
        seed: seeds the random choices (which calls are held, for how long).
    """

    def __init__(
        self,
        max_workers: int = 8,
        *,
        preempt: float = 0.5,
        max_pause: float = 0.002,
        seed: int = 0,
    ) -> None:
        super().__init__(max_workers, name="chaos")
        self.preempt = preempt
        self.max_pause = max_pause
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def schedule(
        self, action: typing.ScheduledAction[_TState], state: _TState | None = None
    ) -> abc.DisposableBase:
        """Hand ``action`` to the pool, then maybe hold this thread back before returning."""
        handle = super().schedule(action, state)
        with self._lock:
            pause = self._random.random() * self.max_pause
            held = self._random.random() < self.preempt
        if held:
            # Not a wait for something: the injected preemption itself. A zero-length sleep
            # already yields the GIL; a longer one lets the pool run whole chains of actions.
            time.sleep(pause)
        return handle
