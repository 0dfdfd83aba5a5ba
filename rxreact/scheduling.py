"""ElasticScheduler: a thread pool whose timers don't occupy its threads.

RxPY's ``ThreadPoolScheduler`` creates an event-loop scheduler per ``schedule`` call and, for
``schedule_relative``, parks a pool thread in a timed wait until the due time: a 60-second
tool timeout holds a worker for 60 seconds even after the tool answered, and a few of them
starve the pool. An agent schedules exactly such timers (tool timeouts, retry backoff, chunk
timeouts) on its pool, so rxreact uses this scheduler instead, the Python counterpart of
Reactor's ``boundedElastic``:

- ``schedule`` hands the action to a bounded pool of daemon threads (:class:`_DaemonPool`);
- ``schedule_relative`` / ``schedule_absolute`` put the action on ONE shared timer thread
  (a heap), which hands it to the pool when due; disposing a pending timer removes it.

Daemon threads, as Reactor's ``boundedElastic`` has: ``ThreadPoolExecutor``'s workers are
joined at interpreter exit, so one sync tool that never returns (the agent's tool timeout
ends the run's wait for it, not the thread) would keep the whole process from exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from reactivex import abc, typing
from reactivex.scheduler import ImmediateScheduler, TrampolineScheduler
from reactivex.scheduler.periodicscheduler import PeriodicScheduler

__all__ = ["ElasticScheduler", "handoff_lateness", "shared_scheduler", "timer_scheduler"]

_TState = TypeVar("_TState")
log: logging.Logger = logging.getLogger(__name__)


class ElasticScheduler(PeriodicScheduler):
    """Runs actions on a bounded thread pool; timed actions wait on a shared timer thread.

    Args:
        max_workers: pool size.
        name: thread-name prefix (shows in tracebacks and marble recordings).
    """

    def __init__(self, max_workers: int = 8, name: str = "rxreact") -> None:
        super().__init__()
        self.max_workers = max_workers
        self.name = name
        self._pool = _DaemonPool(max_workers, name)
        self._batches: dict[asyncio.AbstractEventLoop, _LoopBatch] = {}

    def __repr__(self) -> str:
        return f"ElasticScheduler(max_workers={self.max_workers}, name={self.name!r})"

    def schedule(
        self, action: typing.ScheduledAction[_TState], state: _TState | None = None
    ) -> abc.DisposableBase:
        """Run ``action`` on a pool thread as soon as one is free."""
        task = _Task(self, action, state)
        self._pool.submit(task.run)
        return task

    def post(
        self, action: Callable[[], Any], loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        """Run ``action()`` on a pool thread, waking none while one is running.

        For short actions that come in bursts, such as handing a stream's chunks over: a
        running worker takes the action when it is done with the one in hand, so a burst costs
        one thread wake-up instead of one each. Should the running workers stall (an action
        that blocks), another is woken within a few milliseconds. No disposable: an action
        that may be cancelled checks its own flag.

        With ``loop`` (called on that event loop's thread, such as rxreact's I/O loop, where
        every stream's chunks arrive): the loop's posts are handed to the pool together, at
        most once per :data:`HANDOFF_TICK`. A post after a quiet tick goes at once; under
        load, the chunks of many streams share one wake-up.
        """
        if loop is None:
            self._pool.post(action)
            return
        batch = self._batches.get(loop)
        if batch is None:
            batch = self._batches.setdefault(loop, _LoopBatch(self._pool, loop))
            _handoffs.setdefault(loop, weakref.WeakSet()).add(batch)
        batch.add(action)

    def schedule_relative(
        self,
        duetime: typing.RelativeTime,
        action: typing.ScheduledAction[_TState],
        state: _TState | None = None,
    ) -> abc.DisposableBase:
        """Run ``action`` on the pool after ``duetime`` (no pool thread waits meanwhile)."""
        seconds = self.to_seconds(duetime)
        if seconds <= 0:
            return self.schedule(action, state)
        task = _Task(self, action, state)
        task.timer = _timer_thread().call_later(seconds, task.due)
        return task

    def schedule_absolute(
        self,
        duetime: typing.AbsoluteTime,
        action: typing.ScheduledAction[_TState],
        state: _TState | None = None,
    ) -> abc.DisposableBase:
        """Run ``action`` on the pool at ``duetime``."""
        return self.schedule_relative(self.to_datetime(duetime) - self.now, action, state)

    def shutdown(self) -> None:
        """Stop accepting work; queued actions are dropped (pending timers then do nothing)."""
        self._pool.shutdown()


class _DaemonPool:
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
            _timer_thread().call_later(STALL_CHECK, partial(self._watch, self._done))

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
        _timer_thread().call_later(STALL_CHECK, partial(self._watch, done))

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


class _Task(abc.DisposableBase):
    """One action scheduled on an :class:`ElasticScheduler`: its own disposable.

    One small object instead of the reactivex composition (a single-assignment, a composite
    and two disposables, each with its ``RLock``, plus closures): schedules are made for every
    step of every run, and at thousands of runs each of those objects is heap that the
    garbage collector walks. No lock either: ``dispose`` sets the flag before it reads
    ``inner``, and ``run`` stores ``inner`` before it reads the flag, so (each step being
    atomic under the GIL) at least one of them sees the other and the action's own disposable
    is disposed, at worst twice (disposables are idempotent).
    """

    __slots__ = ("_action", "_disposed", "_inner", "_scheduler", "_state", "timer")

    def __init__(
        self, scheduler: ElasticScheduler, action: typing.ScheduledAction[Any], state: Any
    ) -> None:
        self._scheduler = scheduler
        self._action: typing.ScheduledAction[Any] | None = action
        self._state = state
        self._inner: abc.DisposableBase | None = None
        self._disposed = False
        self.timer: list[Any] | None = None
        """The timer-thread entry of a relative schedule (cancelled by :meth:`dispose`)."""

    def due(self) -> None:
        """On the timer thread, when a relative schedule is due: to the pool."""
        if not self._disposed:
            self._scheduler._pool.submit(self.run)

    def run(self) -> None:
        """On a pool thread: run the action unless disposed (then forget it)."""
        action, self._action = self._action, None
        if self._disposed or action is None:
            return
        result = action(self._scheduler, self._state)
        if isinstance(result, abc.DisposableBase):
            self._inner = result
            if self._disposed:
                result.dispose()

    def dispose(self) -> None:
        self._disposed = True
        self._action = None  # a held handle keeps nothing of the action (nor what it holds)
        timer = self.timer
        if timer is not None:
            timer[2] = None  # the timer thread skips a cancelled entry
        inner = self._inner
        if inner is not None:
            inner.dispose()


class _LoopBatch:
    """The posts made on one event loop's thread, handed to a pool together (no lock: only
    that thread touches the batch; the pool's worker writes only the marker's two fields).

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
    )

    def __init__(self, pool: _DaemonPool, loop: asyncio.AbstractEventLoop) -> None:
        self._pool = pool
        self._loop = loop
        self._pending: list[Callable[[], Any]] = []
        self._armed = False
        self._last = -HANDOFF_TICK
        self._marked_at: float | None = None  # loop time of the marker in the queue, if any
        self._delay = 0.0  # how long the last marker waited in the queue

    def add(self, fn: Callable[[], Any]) -> None:
        self._pending.append(fn)
        if self._armed:
            return
        now = self._loop.time()
        if now - self._last >= HANDOFF_TICK:
            self._flush(now)
        else:
            self._armed = True
            self._loop.call_at(self._last + HANDOFF_TICK, self._due)

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


_handoffs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, weakref.WeakSet[_LoopBatch]] = (
    weakref.WeakKeyDictionary()
)
"""Every pool's hand-off batch of each event loop (only that loop's thread adds to its set)."""


def handoff_lateness(loop: asyncio.AbstractEventLoop) -> float:
    """Seconds the most backed-up pool is behind what ``loop`` handed it with
    :meth:`ElasticScheduler.post` (0 when no pool has work of it queued); call on ``loop``.

    A loop that reads on time can still feed pools that cannot keep up: under a GIL the
    process carries about one core, and the loop, whose reads got cheap, keeps reading while
    the chunks wait in the pool's queue. Loop-mode admission
    (:mod:`rxreact.model.openai._admission`) holds new requests back on this as it does on
    the loop's own lateness.
    """
    batches = _handoffs.get(loop)
    if not batches:
        return 0.0
    now = loop.time()
    return max((batch.lateness(now) for batch in batches), default=0.0)


HANDOFF_TICK = 0.01
"""Seconds between two hand-offs of one event loop's posts to a pool (see
:meth:`ElasticScheduler.post`): at most this much added latency, and under load one wake-up
for every chunk that arrives meanwhile, instead of one for each. 10 ms rather than 1: at
1,000 runs it took about 8 % of the CPU off in eight of nine measured pairs (even in the
ninth), and made the p99 latency lower, not higher (fewer wake-ups contend with the I/O
loop for the GIL; BENCHMARKS.md, "Scale, fourth pass"). A post after a quiet tick still
goes at once, so a lone stream waits for nothing, and 10 ms is below a 60 Hz frame.
"""

STALL_CHECK = 0.005
"""Seconds between two looks of a pool's stall watch (see :class:`_DaemonPool`)."""


class _TimerThread:
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
_timer: _TimerThread | None = None


def _timer_thread() -> _TimerThread:
    global _timer
    with _timer_lock:
        if _timer is None:
            _timer = _TimerThread()
        return _timer


_shared_lock = threading.Lock()
_shared: dict[str, ElasticScheduler] = {}


def shared_scheduler(name: str, max_workers: int) -> ElasticScheduler:
    """The process-wide :class:`ElasticScheduler` called ``name``, made on first use."""
    with _shared_lock:
        if name not in _shared:
            _shared[name] = ElasticScheduler(max_workers, name=f"rxreact-{name}")
        return _shared[name]


def timer_scheduler(scheduler: abc.SchedulerBase | None) -> abc.SchedulerBase:
    """Where to run a timed wait (watchdog, backoff, pause): ``scheduler``, unless it would block.

    With no scheduler, or an immediate / trampoline one (which would run a relative schedule by
    blocking the calling thread), a shared two-thread :class:`ElasticScheduler` is used: its
    timers wait on the one shared timer thread. A virtual-time scheduler is kept as it is, so
    a ``TestScheduler`` drives every wait.
    """
    if scheduler is not None and not isinstance(
        scheduler, ImmediateScheduler | TrampolineScheduler
    ):
        return scheduler
    return shared_scheduler("timer", 2)
