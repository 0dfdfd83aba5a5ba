from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable

from rxreact.rx import _valve
from rxreact.rx._fused import Fused, subscribe_fused
from rxreact.scheduling import ElasticScheduler

_T = TypeVar("_T")

_get_ident = threading.get_ident


def deliver_on_(
    scheduler: abc.SchedulerBase, max_buffer: int | None = 1024
) -> Callable[[Observable[_T]], Observable[_T]]:
    def deliver_on(source: Observable[_T]) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscriber_thread = _get_ident()
            # Values only: the terminal notification waits in ``state.terminal`` and is
            # delivered once the queue is empty, so the per-item path allocates nothing.
            queue: deque[Any] = deque()
            # A plain Lock entered with ``with`` costs a third of a Condition's Python-level
            # ``__enter__``; the Condition on the same lock is used only to wait for room.
            lock = threading.Lock()
            room = threading.Condition(lock)
            state = _DrainState()
            drain_disposable = SerialDisposable()
            deliver = observer.on_next
            # On rxreact's pool, a drain is posted (no disposable, no wake-up while a worker
            # runs: see ElasticScheduler.post); ``dispose`` stops it through ``state.disposed``.
            post = scheduler.post if isinstance(scheduler, ElasticScheduler) else None

            def drain(_: abc.SchedulerBase, __: Any = None) -> None:
                # One scheduled action delivers everything queued so far: one thread-pool hop
                # per burst of chunks instead of one per chunk (RxPY's observe_on).
                state.drain_thread = _get_ident()
                while True:
                    with lock:
                        if state.disposed:
                            state.scheduled = False
                            return
                        if not queue:
                            terminal = state.terminal
                            if terminal is None:
                                state.scheduled = False
                                return
                            state.disposed = True
                            break
                        batch = list(queue)
                        queue.clear()
                        if state.waiting:
                            room.notify_all()  # room again: release a held-back producer
                        if state.valve is not None:
                            state.valve.open()  # ... or let a loop-mode producer read again
                            state.valve = None
                    for value in batch:
                        if state.disposed:
                            return
                        deliver(value)
                (error,) = terminal
                if error is not None:
                    observer.on_error(error)
                else:
                    observer.on_completed()

            def drain_now() -> None:
                drain(scheduler)

            def on_next(value: Any) -> None:
                with lock:
                    if state.disposed or state.terminal is not None:
                        return
                    if (
                        max_buffer is not None
                        and len(queue) >= max_buffer
                        and _get_ident() not in (subscriber_thread, state.drain_thread)
                    ):
                        # Backpressure: hold the producer (the HTTP reader) until the consumer
                        # catches up. Never on the thread that subscribed or drains (a
                        # TestScheduler runs everything on one thread): a thread cannot wait for
                        # itself, so there the buffer grows instead of deadlocking.
                        valve = _valve.CURRENT.get()
                        if valve is not None:
                            # A producer on the shared I/O loop must not block it: it stops
                            # reading after this read's events instead (see rxreact.rx._valve).
                            valve.close()
                            state.valve = valve
                        else:
                            state.waiting += 1
                            try:
                                while len(queue) >= max_buffer and not state.disposed:
                                    room.wait(0.5)
                            finally:
                                state.waiting -= 1
                            if state.disposed:
                                return
                    queue.append(value)
                    if state.scheduled:
                        return
                    state.scheduled = True
                if post is not None:
                    valve = _valve.CURRENT.get()  # set on the I/O loop: batch hand-offs there
                    post(drain_now, None if valve is None else valve.loop)
                else:
                    drain_disposable.disposable = scheduler.schedule(drain)

            def end(error: Exception | None) -> None:
                with lock:
                    if state.disposed or state.terminal is not None:
                        return
                    state.terminal = (error,)
                    if state.scheduled:
                        return
                    state.scheduled = True
                if post is not None:
                    valve = _valve.CURRENT.get()  # set on the I/O loop: batch hand-offs there
                    post(drain_now, None if valve is None else valve.loop)
                else:
                    drain_disposable.disposable = scheduler.schedule(drain)

            def dispose() -> None:
                with lock:
                    state.disposed = True
                    queue.clear()
                    room.notify_all()
                    if state.valve is not None:
                        state.valve.open()
                        state.valve = None

            subscription = subscribe_fused(
                source, on_next, end, lambda: end(None), subscribe_scheduler
            )
            # Mark disposed first: it releases a held-back producer before the source is torn down.
            return CompositeDisposable(Disposable(dispose), subscription, drain_disposable)

        return Fused(subscribe)

    return deliver_on


class _DrainState:
    __slots__ = ("disposed", "drain_thread", "scheduled", "terminal", "valve", "waiting")

    def __init__(self) -> None:
        self.scheduled = False
        self.disposed = False
        self.drain_thread: int | None = None
        self.terminal: tuple[Exception | None] | None = None
        """``(error,)`` once the source ended (``(None,)``: completed); delivered after the
        queued values."""
        self.waiting = 0
        """Producers held back, waiting for room."""
        self.valve: _valve.Valve | None = None
        """The valve of a loop-mode producer this consumer closed (opened again with room)."""
