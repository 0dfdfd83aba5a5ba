"""ElasticScheduler: a thread pool whose timers don't occupy its threads.

RxPY's ``ThreadPoolScheduler`` creates an event-loop scheduler per ``schedule`` call and, for
``schedule_relative``, parks a pool thread in a timed wait until the due time: a 60-second
tool timeout holds a worker for 60 seconds even after the tool answered, and a few of them
starve the pool. An agent schedules exactly such timers (tool timeouts, retry backoff, chunk
timeouts) on its pool, so rxreact uses this scheduler instead, the Python counterpart of
Reactor's ``boundedElastic``:

- ``schedule`` hands the action to a bounded pool of daemon threads
  (:class:`~rxreact.rx._daemon_pool.DaemonPool`);
- ``schedule_relative`` / ``schedule_absolute`` put the action on ONE shared timer thread
  (a heap), which hands it to the pool when due; disposing a pending timer removes it.

Daemon threads, as Reactor's ``boundedElastic`` has: ``ThreadPoolExecutor``'s workers are
joined at interpreter exit, so one sync tool that never returns (the agent's tool timeout
ends the run's wait for it, not the thread) would keep the whole process from exiting.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import abc, typing
from reactivex.scheduler import ImmediateScheduler, TrampolineScheduler
from reactivex.scheduler.periodicscheduler import PeriodicScheduler

from rxreact.rx._daemon_pool import DaemonPool, LoopBatch, handoff_lateness
from rxreact.rx._timer_thread import timer_thread

__all__ = ["ElasticScheduler", "handoff_lateness", "shared_scheduler", "timer_scheduler"]

_TState = TypeVar("_TState")


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
        self._pool = DaemonPool(max_workers, name)
        self._batches: dict[asyncio.AbstractEventLoop, LoopBatch] = {}

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
        every stream's chunks arrive): the loop's posts are handed to the pool together, at most
        once a millisecond, or once per :data:`~rxreact.rx._daemon_pool.HANDOFF_TICK` while the
        loop is busy (:class:`~rxreact.rx._daemon_pool.LoopBatch`). A post after a quiet tick goes
        at once; under load, the chunks of many streams share one wake-up.
        """
        if loop is None:
            self._pool.post(action)
            return
        batch = self._batches.get(loop)
        if batch is None:
            batch = self._batches.setdefault(loop, LoopBatch(self._pool, loop))
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
        task.timer = timer_thread().call_later(seconds, task)  # calls task.__call__ when due
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

    def __call__(self) -> None:
        """On the timer thread, when a relative schedule is due: to the pool.

        The timer holds the task itself, not ``task.due``: a bound method per timer was one
        more object for as long as the timer waited (a run keeps two waiting, its watchdogs).
        """
        # The entry holds the task and the task its entry: a fired timer lets go of it, or
        # the pair would be a reference cycle left for the collector (a cancelled one is
        # broken by ``cancel``).
        self.timer = None
        if not self._disposed:
            self._scheduler._pool.submit(self.run)

    def run(self) -> None:
        """On a pool thread: run the action unless disposed (then forget it)."""
        action, self._action = self._action, None
        if self._disposed or action is None:
            return
        result = action(self._scheduler, self._state)
        # ``None`` first: most actions return nothing, and an ABC's isinstance is a Python call.
        if result is not None and isinstance(result, abc.DisposableBase):
            self._inner = result
            if self._disposed:
                result.dispose()

    def dispose(self) -> None:
        self._disposed = True
        self._action = None  # a held handle keeps nothing of the action (nor what it holds)
        timer = self.timer
        if timer is not None:
            timer_thread().cancel(timer)
        inner = self._inner
        if inner is not None:
            inner.dispose()


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
