"""The pool under :class:`~rxreact.scheduling.ElasticScheduler`: daemon threads on one FIFO
queue, the batched hand-offs from an event loop's thread, and how far a pool is behind them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

from rxreact.rx._timer_thread import timer_thread

__all__ = [
    "BUSY_POSTS",
    "HANDOFF_TICK",
    "QUIET_TICK",
    "STALL_CHECK",
    "DaemonPool",
    "LoopBatch",
    "handoff_lateness",
]

log: logging.Logger = logging.getLogger("rxreact.scheduling")  # the name users configure

HANDOFF_TICK = 0.01
"""Seconds between two hand-offs of one event loop's posts to a pool while the loop is busy
(see :meth:`~rxreact.scheduling.ElasticScheduler.post` and :data:`BUSY_POSTS`): at most this
much added latency, and one wake-up for every chunk that arrives meanwhile instead of one for
each. 10 ms rather than 1 at 1,000 runs took about 8 % of the CPU off in eight of nine
measured pairs, and lowered the p99 latency (fewer wake-ups contend with the I/O loop for the
GIL; BENCHMARKS.md, "Scale, fourth pass"). Below 60 Hz, but not nothing: a short conversation
whose chunks come in bursts waited for it at every burst (+14 ms to its first answer token),
so a loop that is not busy hands over every :data:`QUIET_TICK`.
"""

QUIET_TICK = 0.001
"""Seconds between two hand-offs while the loop is not busy: one stream's burst of chunks
waits at most a millisecond."""

BUSY_POSTS = 32
"""Posts per :data:`HANDOFF_TICK` (3,200 a second) from which a loop counts as busy: a
thousand paced streams make about a hundred, one conversation a handful."""

STALL_CHECK = 0.005
"""Seconds between two looks of a pool's stall watch (see :class:`DaemonPool`)."""


class DaemonPool:
    """Up to ``max_workers`` daemon threads running callables from one FIFO queue.

    Threads start on demand and then stay. :meth:`submit` hands a callable to an idle thread
    when there is one, else to a new thread while below the bound, else it waits in the
    queue. :meth:`post` wakes nobody while a worker is running: that worker takes the
    callable when it is done with the one in hand. A stall watch (:data:`STALL_CHECK`, on the
    timer thread, armed only while posted work waits) wakes another worker when the running
    ones have finished nothing since the last look, so a callable that blocks (a slow
    subscriber) delays the others by a few milliseconds, not for as long as it blocks. An
    exception escaping a callable is logged, not lost, and the thread goes on.
    """

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        self._lock = threading.Lock()
        self._queue: deque[Callable[[], Any]] = deque()
        self._parked: list[threading.Lock] = []  # idle workers, each waiting on its own lock
        self._threads = 0
        self._running = 0  # workers not parked (woken ones included)
        self._done = 0  # callables finished: the stall watch's sign of progress
        self._watching = False
        self._shutdown = False

    @property
    def queued(self) -> int:
        """Callables waiting for a worker (read without the lock: a deque's length is atomic)."""
        return len(self._queue)

    def submit(self, fn: Callable[[], Any]) -> None:
        with self._lock:
            self._put(fn)
            self._wake()

    def post(self, fn: Callable[[], Any]) -> None:
        with self._lock:
            self._put(fn)
            self._posted()

    def post_all(self, fns: list[Callable[[], Any]]) -> None:
        """:meth:`post` each, under one lock and with at most one wake-up."""
        with self._lock:
            if self._shutdown:
                return  # a batch gathered before shutdown: dropped, as queued work is
            self._queue.extend(fns)
            self._posted()

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
            self._queue.clear()
            parked, self._parked = self._parked, []
            self._running += len(parked)  # each leaves through the running path
        for waiter in parked:
            waiter.release()

    def _put(self, fn: Callable[[], Any]) -> None:
        if self._shutdown:
            raise RuntimeError(f"{self._name}: cannot schedule new work after shutdown")
        self._queue.append(fn)

    def _posted(self) -> None:
        """Posted work is queued (lock held): wake a worker only if none runs, else make sure
        the stall watch is armed."""
        if self._running == 0:
            self._wake()
        elif not self._watching:
            self._watching = True
            timer_thread().call_later(STALL_CHECK, partial(self._watch, self._done))

    def _wake(self) -> None:
        """One more worker on the queue: a parked one, else a new one (lock held)."""
        if self._parked:
            self._running += 1
            self._parked.pop().release()
        elif self._threads < self._max_workers:
            self._threads += 1
            self._running += 1
            name = f"{self._name}_{self._threads - 1}"
            threading.Thread(target=self._work, name=name, daemon=True).start()

    def _watch(self, done_before: int) -> None:
        """On the timer thread: wake a worker if posted work waits and nothing finished."""
        with self._lock:
            if not self._queue or self._shutdown:
                self._watching = False
                return
            if self._done == done_before:
                self._wake()
            done = self._done
        timer_thread().call_later(STALL_CHECK, partial(self._watch, done))

    def _work(self) -> None:
        waiter = threading.Lock()
        waiter.acquire()
        queue, lock = self._queue, self._lock
        while True:
            with lock:
                if self._shutdown:
                    self._running -= 1
                    return
                if queue:
                    fn = queue.popleft()
                else:
                    self._running -= 1
                    self._parked.append(waiter)
                    fn = None
            if fn is None:
                waiter.acquire()  # released by _wake (which counted us running) or shutdown
                continue
            try:
                fn()
            except Exception:
                log.exception("%s: an action raised", self._name)
            self._done += 1  # unlocked: only its change matters to the watch, not its value


class LoopBatch:
    """The posts made on one event loop's thread, handed to a pool together (no lock: only
    that thread touches the batch; the pool's worker writes only the marker's two fields).

    A post at least a tick after the last hand-off goes at once; one within it waits for the
    tick's end, with every post made meanwhile. The tick is :data:`QUIET_TICK`, or
    :data:`HANDOFF_TICK` while the loop posts :data:`BUSY_POSTS` or more per
    :data:`HANDOFF_TICK` (measured over windows of at least that long).

    Each hand-off starts with a marker while none is outstanding: its wait in the pool's queue
    is how far the pool is behind the loop's streams (:meth:`lateness`).
    """

    __slots__ = (
        "__weakref__",
        "_armed",
        "_delay",
        "_last",
        "_loop",
        "_marked_at",
        "_pending",
        "_pool",
        "_posts",
        "_since",
        "tick",
    )

    def __init__(self, pool: DaemonPool, loop: asyncio.AbstractEventLoop) -> None:
        self._pool = pool
        self._loop = loop
        self._pending: list[Callable[[], Any]] = []
        self._armed = False
        self._last = -HANDOFF_TICK
        self.tick = QUIET_TICK
        """The least time between two hand-offs now (quiet or busy)."""
        self._since = loop.time()  # the start of the window posts are counted over
        self._posts = 0
        self._marked_at: float | None = None  # loop time of the marker in the queue, if any
        self._delay = 0.0  # how long the last marker waited in the queue
        _handoffs.setdefault(loop, weakref.WeakSet()).add(self)  # on the loop's thread

    def add(self, fn: Callable[[], Any]) -> None:
        self._pending.append(fn)
        if self._armed:
            return
        now = self._loop.time()
        if now - self._last >= self.tick:
            self._flush(now)
        else:
            self._armed = True
            self._loop.call_at(self._last + self.tick, self._due)

    def lateness(self, now: float) -> float:
        """Seconds the pool is behind this loop's hand-offs: the longer of the outstanding
        marker's wait so far and the last marker's whole wait; 0 once its queue is empty."""
        if not self._pool.queued:
            return 0.0
        marked_at = self._marked_at
        return max(self._delay, 0.0 if marked_at is None else now - marked_at)

    def _due(self) -> None:
        self._armed = False
        self._flush(self._loop.time())

    def _flush(self, now: float) -> None:
        self._last = now
        pending, self._pending = self._pending, []
        self._posts += len(pending)
        window = now - self._since
        if window >= HANDOFF_TICK:  # busy: BUSY_POSTS or more per HANDOFF_TICK in the window
            busy = self._posts * HANDOFF_TICK >= BUSY_POSTS * window
            self.tick = HANDOFF_TICK if busy else QUIET_TICK
            self._since, self._posts = now, 0
        if self._marked_at is None:
            self._marked_at = now
            pending.insert(0, self._marker)
        self._pool.post_all(pending)

    def _marker(self) -> None:
        # On a worker: loop.time() is the loop's clock read from here (a monotonic clock).
        marked_at = self._marked_at
        if marked_at is not None:
            self._delay = self._loop.time() - marked_at
        self._marked_at = None


_handoffs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.WeakSet[LoopBatch]] = (
    weakref.WeakKeyDictionary()
)
"""Every pool's hand-off batch of each event loop (only that loop's thread adds to its set)."""


def handoff_lateness(loop: asyncio.AbstractEventLoop) -> float:
    """Seconds the most backed-up pool is behind what ``loop`` handed it with
    :meth:`~rxreact.scheduling.ElasticScheduler.post` (0 when no pool has work of it
    queued); call on ``loop``.

    A loop that reads on time can still feed pools that cannot keep up: under a GIL the
    process carries about one core, and the loop, whose reads got cheap, keeps reading while
    the chunks wait in the pool's queue. Loop-mode admission
    (:mod:`rxreact.model.http._admission`) holds new requests back on this as it does on
    the loop's own lateness.
    """
    batches = _handoffs.get(loop)
    if not batches:
        return 0.0
    now = loop.time()
    return max((batch.lateness(now) for batch in batches), default=0.0)
