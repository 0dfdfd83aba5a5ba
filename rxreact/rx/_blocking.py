"""A run's events as a plain blocking iterator, through a bounded buffer.

``for event in agent.iter(q)`` subscribes when the loop asks for its first item and hands
events from the agent's threads to the consuming thread through a buffer of bounded size: a
consumer that falls behind holds the producing thread back (as
:func:`~rxreact.operators.deliver_on` does) instead of letting the buffer grow. Leaving the
loop (``break``, an exception, or ``close()`` on the iterator) disposes the subscription,
which cancels the run, and releases a producer waiting for room.

Under a virtual-time scheduler producer and consumer are the same thread, so there the whole
run is played first (as ``ReactAgent.run`` does) into an unbounded buffer.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

from reactivex import Observable, abc
from reactivex.scheduler import VirtualTimeScheduler

__all__ = ["iterate"]

T = TypeVar("T")


class _Buffer(Generic[T]):
    """Items, the end of the stream, and a producer that waits while the buffer is full."""

    def __init__(self, capacity: int | None) -> None:
        self._items: deque[T] = deque()
        self._capacity = capacity
        self._changed = threading.Condition()
        self._ended = False
        self._error: Exception | None = None
        self._closed = False

    def on_next(self, item: T) -> None:
        with self._changed:
            while (
                self._capacity is not None
                and len(self._items) >= self._capacity
                and not self._closed
            ):
                self._changed.wait()
            if self._closed:
                return
            self._items.append(item)
            self._changed.notify_all()

    def on_error(self, error: Exception) -> None:
        with self._changed:
            self._error = error
            self._ended = True
            self._changed.notify_all()

    def on_completed(self) -> None:
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def close(self) -> None:
        """No more items are wanted: release a waiting producer, drop what comes later."""
        with self._changed:
            self._closed = True
            self._items.clear()
            self._changed.notify_all()

    def take(self) -> deque[T]:
        """The next item in a deque of one, or an empty deque at the end; raises the error."""
        with self._changed:
            while not self._items and not self._ended:
                self._changed.wait()
            if self._items:
                self._changed.notify_all()
                return deque((self._items.popleft(),))
            if self._error is not None:
                raise self._error
            return deque()


def iterate(
    source: Observable[T], scheduler: abc.SchedulerBase, buffer_size: int | None
) -> Iterator[T]:
    """Iterate ``source`` on the calling thread, at most ``buffer_size`` items ahead.

    Args:
        source: a cold Observable; it is subscribed when the first item is asked for.
        scheduler: the scheduler ``source`` runs on; a virtual-time one is advanced here.
        buffer_size: items the producer may run ahead of the loop (``None``: no bound).

    Returns:
        A generator; closing it (or leaving a ``for`` loop over it) disposes the subscription.
    """
    virtual = isinstance(scheduler, VirtualTimeScheduler)
    buffer: _Buffer[T] = _Buffer(None if virtual else buffer_size)
    subscription = source.subscribe(buffer.on_next, buffer.on_error, buffer.on_completed)
    try:
        if isinstance(scheduler, VirtualTimeScheduler):
            # The base class's start runs until nothing is left; TestScheduler.start would also
            # jump the clock to 1000.
            VirtualTimeScheduler.start(scheduler)
        while item := buffer.take():
            yield item[0]
    finally:
        buffer.close()
        subscription.dispose()
