"""A pool whose one worker the test holds, and an event loop whose clock the test sets: what
hand-off lateness (``rxreact.scheduling.handoff_lateness``) is measured with."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rxreact.scheduling import ElasticScheduler


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock the test sets (never run: a post only reads its time)."""

    now = 100.0

    def time(self) -> float:
        return self.now


@contextmanager
def held(scheduler: ElasticScheduler) -> Iterator[threading.Event]:
    """Hold a worker of ``scheduler`` until the block ends, or until the event yielded is set
    (what is queued meanwhile waits, when the pool has one worker)."""
    release, busy = threading.Event(), threading.Event()

    def hold(_scheduler: object, _state: object) -> None:
        busy.set()
        release.wait(10)

    scheduler.schedule(hold)
    try:
        assert busy.wait(5), "the pool never ran the holding action"
        yield release
    finally:
        release.set()
