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

import contextlib
import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import abc, typing
from reactivex.disposable import CompositeDisposable, Disposable, SingleAssignmentDisposable
from reactivex.scheduler import ImmediateScheduler, TrampolineScheduler
from reactivex.scheduler.periodicscheduler import PeriodicScheduler

__all__ = ["ElasticScheduler", "shared_scheduler", "timer_scheduler"]

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

    def __repr__(self) -> str:
        return f"ElasticScheduler(max_workers={self.max_workers}, name={self.name!r})"

    def schedule(
        self, action: typing.ScheduledAction[_TState], state: _TState | None = None
    ) -> abc.DisposableBase:
        """Run ``action`` on a pool thread as soon as one is free."""
        inner = SingleAssignmentDisposable()
        disposed = False

        def run() -> None:
            if not disposed:
                inner.disposable = self.invoke_action(action, state)

        def dispose() -> None:
            nonlocal disposed
            disposed = True

        self._pool.submit(run)
        return CompositeDisposable(inner, Disposable(dispose))

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
        inner = SingleAssignmentDisposable()

        def due() -> None:
            inner.disposable = self.schedule(action, state)

        cancel = _timer_thread().call_later(seconds, due)
        return CompositeDisposable(Disposable(cancel), inner)

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

    Threads start on demand and then stay; a new callable goes to an idle thread when there
    is one (the idle count is a semaphore, as in ``ThreadPoolExecutor``), else to a new
    thread while below the bound, else it waits in the queue. An exception escaping a
    callable is logged, not lost in an unread future, and the thread goes on.
    """

    def __init__(self, max_workers: int, name: str) -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._name = name
        self._queue: queue.SimpleQueue[Callable[[], Any] | None] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads = 0
        self._shutdown = False

    def submit(self, fn: Callable[[], Any]) -> None:
        with self._lock:
            if self._shutdown:
                raise RuntimeError(f"{self._name}: cannot schedule new work after shutdown")
            self._queue.put(fn)
            if self._idle.acquire(timeout=0):
                return  # an idle thread will take it
            if self._threads < self._max_workers:
                self._threads += 1
                name = f"{self._name}_{self._threads - 1}"
                threading.Thread(target=self._work, name=name, daemon=True).start()

    def shutdown(self) -> None:
        with self._lock:
            self._shutdown = True
        self._queue.put(None)  # wakes one thread, which passes it on to the next

    def _work(self) -> None:
        get, idle = self._queue.get, self._idle.release
        while True:
            fn = get()
            if fn is None or self._shutdown:
                self._queue.put(None)
                return
            try:
                fn()
            except Exception:
                log.exception("%s: an action raised", self._name)
            idle()


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

    def call_later(self, seconds: float, callback: Callable[[], Any]) -> Callable[[], None]:
        entry = [time.monotonic() + seconds, next(self._ids), callback]
        with self._condition:
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._condition.notify()

        def cancel() -> None:
            entry[2] = None

        return cancel

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
