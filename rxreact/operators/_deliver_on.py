from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable

_T = TypeVar("_T")

_NEXT, _ERROR, _COMPLETED = 0, 1, 2


def deliver_on_(
    scheduler: abc.SchedulerBase, max_buffer: int | None = 1024
) -> Callable[[Observable[_T]], Observable[_T]]:
    def deliver_on(source: Observable[_T]) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscriber_thread = threading.get_ident()
            queue: deque[tuple[int, Any]] = deque()
            lock = threading.Condition()
            state = _DrainState()
            drain_disposable = SerialDisposable()

            def drain(_: abc.SchedulerBase, __: Any = None) -> None:
                # One scheduled action delivers everything queued so far: one thread-pool hop
                # per burst of chunks instead of one per chunk (RxPY's observe_on).
                state.drain_thread = threading.get_ident()
                while True:
                    with lock:
                        if state.disposed or not queue:
                            state.scheduled = False
                            lock.notify_all()
                            return
                        batch = list(queue)
                        queue.clear()
                        lock.notify_all()  # room again: release a held-back producer
                    for kind, value in batch:
                        if state.disposed:
                            return
                        if kind == _NEXT:
                            observer.on_next(value)
                        elif kind == _ERROR:
                            state.disposed = True
                            observer.on_error(value)
                            return
                        else:
                            state.disposed = True
                            observer.on_completed()
                            return

            def enqueue(kind: int, value: Any) -> None:
                with lock:
                    if state.disposed:
                        return
                    if (
                        kind == _NEXT
                        and max_buffer is not None
                        and len(queue) >= max_buffer
                        and threading.get_ident() not in (subscriber_thread, state.drain_thread)
                    ):
                        # Backpressure: hold the producer (the HTTP reader) until the consumer
                        # catches up. Never on the thread that subscribed or drains (a
                        # TestScheduler runs everything on one thread): a thread cannot wait for
                        # itself, so there the buffer grows instead of deadlocking.
                        while len(queue) >= max_buffer and not state.disposed:
                            lock.wait(0.5)
                        if state.disposed:
                            return
                    queue.append((kind, value))
                    if state.scheduled:
                        return
                    state.scheduled = True
                drain_disposable.disposable = scheduler.schedule(drain)

            def dispose() -> None:
                with lock:
                    state.disposed = True
                    queue.clear()
                    lock.notify_all()

            subscription = source.subscribe(
                lambda value: enqueue(_NEXT, value),
                lambda error: enqueue(_ERROR, error),
                lambda: enqueue(_COMPLETED, None),
                scheduler=subscribe_scheduler,
            )
            # Mark disposed first: it releases a held-back producer before the source is torn down.
            return CompositeDisposable(Disposable(dispose), subscription, drain_disposable)

        return Observable(subscribe)

    return deliver_on


class _DrainState:
    __slots__ = ("disposed", "drain_thread", "scheduled")

    def __init__(self) -> None:
        self.scheduled = False
        self.disposed = False
        self.drain_thread: int | None = None
