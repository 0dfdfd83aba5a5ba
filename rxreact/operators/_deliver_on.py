"""``deliver_on``'s subscription: one object per stream, not a nest of closures.

Each subscription used to be seven closures over a dozen cells, a state object, a Condition,
and three RxPY disposables with an RLock each: some forty objects per live stream, every one
walked by each garbage collection, at thousands of concurrent runs the collector's main work.
:class:`_Delivery` holds the same state in slots, is the disposable it returns, and makes the
Condition (only a producer held back in thread mode needs it) and the serial disposable (only
a scheduler other than rxreact's pool needs it) when they are first needed. It is the
source's observer as it is (a :class:`~rxreact.rx._fused.Keeper`); the source's subscription,
which holds it, is let go of once the stream ended or was disposed: a finished stream leaves
no reference cycle.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SerialDisposable

from rxreact.rx import _valve
from rxreact.rx._fused import Fused, Keeper, subscribe_observer
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
            delivery = _Delivery(observer, scheduler, max_buffer)
            subscription = subscribe_observer(source, delivery, subscribe_scheduler)
            if delivery.disposed:  # ended (or disposed) while subscribing: nothing to hold
                subscription.dispose()
            else:
                delivery.subscription = subscription
            return delivery

        return Fused(subscribe)

    return deliver_on


class _Delivery(Keeper, abc.DisposableBase):
    """One subscription of ``deliver_on``: the queue, the drain, backpressure, disposal; the
    source's observer too (a :class:`~rxreact.rx._fused.Keeper`: ``on_error`` and
    ``on_completed`` pass once, through ``_end``)."""

    __slots__ = (
        "_drain_disposable",
        "_lock",
        "_room",
        "batch_end",
        "deliver",
        "disposed",
        "drain_thread",
        "max_buffer",
        "observer",
        "post",
        "queue",
        "scheduled",
        "scheduler",
        "subscriber_thread",
        "subscription",
        "terminal",
        "valve",
        "waiting",
    )

    def __init__(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase, max_buffer: int | None
    ) -> None:
        self.observer = observer
        self.deliver = observer.on_next
        # Told when a drain delivered its batch, if it asks (a typed run's partials come out
        # once per batch, not once per chunk: see operators/_output_partial.py).
        self.batch_end: Any = getattr(observer, "batch_end", None)
        self.scheduler = scheduler
        # On rxreact's pool, a drain is posted (no disposable, no wake-up while a worker
        # runs: see ElasticScheduler.post); ``dispose`` stops it through ``disposed``.
        self.post = scheduler.post if isinstance(scheduler, ElasticScheduler) else None
        self.max_buffer = max_buffer
        self.subscriber_thread = _get_ident()
        # Values only: the terminal notification waits in ``terminal`` and is delivered once
        # the queue is empty, so the per-item path allocates nothing.
        self.queue: deque[Any] = deque()
        # A plain Lock entered with ``with`` costs a third of a Condition's Python-level
        # ``__enter__``; a Condition on the same lock is made only to wait for room.
        self._lock = threading.Lock()
        self._room: threading.Condition | None = None
        self._drain_disposable: SerialDisposable | None = None
        self.subscription: abc.DisposableBase | None = None
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

    # -- the producer's side (the source's thread) --------------------------------------------

    def on_next(self, value: Any) -> None:
        with self._lock:
            if self.disposed or self.terminal is not None:
                return
            queue, max_buffer = self.queue, self.max_buffer
            if (
                max_buffer is not None
                and len(queue) >= max_buffer
                and _get_ident() not in (self.subscriber_thread, self.drain_thread)
            ):
                # Backpressure: hold the producer (the HTTP reader) until the consumer catches
                # up. Never on the thread that subscribed or drains (a TestScheduler runs
                # everything on one thread): a thread cannot wait for itself, so there the
                # buffer grows instead of deadlocking.
                valve = _valve.current()
                if valve is not None:
                    # A producer on the shared I/O loop must not block it: it stops reading
                    # after this read's events instead (see rxreact.rx._valve).
                    valve.close()
                    self.valve = valve
                else:
                    if self._room is None:
                        self._room = threading.Condition(self._lock)
                    self.waiting += 1
                    try:
                        while len(queue) >= max_buffer and not self.disposed:
                            self._room.wait(0.5)
                    finally:
                        self.waiting -= 1
                    if self.disposed:
                        return
            queue.append(value)
            if self.scheduled:
                return
            self.scheduled = True
        self._schedule()

    def ended(self) -> bool:
        return self.terminal is not None

    def on_error(self, error: Exception) -> None:
        self._end(error)

    def on_completed(self) -> None:
        self._end(None)

    def _end(self, error: Exception | None) -> None:
        with self._lock:
            if self.disposed or self.terminal is not None:
                return
            self.terminal = (error,)
            if self.scheduled:
                return
            self.scheduled = True
        self._schedule()

    def _schedule(self) -> None:
        post = self.post
        if post is not None:
            valve = _valve.current()  # set on the I/O loop: batch hand-offs there
            post(self._drain_now, None if valve is None else valve.loop)
            return
        if self._drain_disposable is None:
            self._drain_disposable = SerialDisposable()
        self._drain_disposable.disposable = self.scheduler.schedule(self._drain)

    # -- the consumer's side (the scheduler's thread) -----------------------------------------

    def _drain_now(self) -> None:
        self._drain(self.scheduler)

    def _drain(self, _: abc.SchedulerBase, __: Any = None) -> None:
        # One scheduled action delivers everything queued so far: one thread-pool hop per
        # burst of chunks instead of one per chunk (RxPY's observe_on).
        self.drain_thread = _get_ident()
        lock, queue, deliver = self._lock, self.queue, self.deliver
        while True:
            with lock:
                if self.disposed:
                    self.scheduled = False
                    return
                if not queue:
                    terminal = self.terminal
                    if terminal is None:
                        self.scheduled = False
                        return
                    self.disposed = True
                    break
                batch = list(queue)
                queue.clear()
                if self.waiting and self._room is not None:
                    self._room.notify_all()  # room again: release a held-back producer
                if self.valve is not None:
                    self.valve.open()  # ... or let a loop-mode producer read again
                    self.valve = None
            for value in batch:
                if self.disposed:
                    return
                deliver(value)
            if self.batch_end is not None and not self.disposed:
                self.batch_end()
        (error,) = terminal
        try:
            if error is not None:
                self.observer.on_error(error)
            else:
                self.observer.on_completed()
        finally:
            self._release()

    # -- disposal -------------------------------------------------------------------------------

    def dispose(self) -> None:
        # Marked disposed first: it releases a held-back producer before the source is torn
        # down.
        with self._lock:
            self.disposed = True
            self.queue.clear()
            if self._room is not None:
                self._room.notify_all()
            if self.valve is not None:
                self.valve.open()
                self.valve = None
        self._release()
        drain = self._drain_disposable
        if drain is not None:
            drain.dispose()

    def _release(self) -> None:
        """Dispose the source's subscription and let go of it: it holds this object, so
        keeping it would make a reference cycle of every finished stream."""
        subscription, self.subscription = self.subscription, None
        if subscription is not None:
            subscription.dispose()
