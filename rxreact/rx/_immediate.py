"""``immediately(*values)``: an Observable that emits its values during subscribe.

``reactivex.of`` schedules its emissions on the subscribe-time scheduler. Inside an agent run
that is a thread pool, so each ``of`` would hop threads, and several of them merged together
(one per tool call) would race and arrive in any order. The agent's own synchronous events
must come out in the order they were made, on the thread that made them.
"""

from __future__ import annotations

from typing import Any, TypeVar

from reactivex import Observable, abc

from rxreact.rx._fused import NOTHING, Fused, subscribe_observer

__all__ = ["immediately", "starting_with"]

_T = TypeVar("_T")


def immediately(*values: _T) -> Observable[_T]:
    """Emit ``values`` then complete, synchronously, on the subscribing thread.

    ::

        immediately(a, b):  (ab|)
    """
    return Fused(_Values(values).subscribe)


class _Values:
    """``immediately``'s subscribe function: the values in a slot, where
    ``reactivex.from_iterable`` on the immediate scheduler kept a closure and an RLock, alive
    as long as the run that holds the Observable (for every garbage collection to walk)."""

    __slots__ = ("values",)

    def __init__(self, values: tuple[Any, ...]) -> None:
        self.values = values

    def subscribe(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # As ``from_iterable``: an exception the observer raises on a value ends the sequence
        # through ``on_error``.
        try:
            for value in self.values:
                observer.on_next(value)
        except Exception as error:
            observer.on_error(error)
        else:
            observer.on_completed()
        return NOTHING  # it has ended already: nothing left to dispose of


def starting_with(source: Observable[_T], *values: _T) -> Observable[_T]:
    """Emit ``values`` during subscribe, then subscribe to ``source``; no scheduler hop.

    ``source.pipe(ops.start_with(...))`` is a ``concat``: it would subscribe to ``source`` in
    an action scheduled on the subscribe-time scheduler (a thread-pool hop per round).

    ::

        source:                  ---x---y--|
        starting_with(a, b):     (ab)x---y--|
    """

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        for value in values:
            observer.on_next(value)
        return subscribe_observer(source, observer, scheduler)

    return Fused(subscribe)
