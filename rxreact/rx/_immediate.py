"""``immediately(*values)``: an Observable that emits its values during subscribe.

``reactivex.of`` schedules its emissions on the subscribe-time scheduler. Inside an agent run
that is a thread pool, so each ``of`` would hop threads, and several of them merged together
(one per tool call) would race and arrive in any order. The agent's own synchronous events
must come out in the order they were made, on the thread that made them.
"""

from __future__ import annotations

from typing import TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex.scheduler import ImmediateScheduler

from rxreact.rx._fused import Fused, subscribe_fused

__all__ = ["immediately", "starting_with"]

_T = TypeVar("_T")


def immediately(*values: _T) -> Observable[_T]:
    """Emit ``values`` then complete, synchronously, on the subscribing thread.

    ::

        immediately(a, b):  (ab|)
    """
    return reactivex.from_iterable(values, scheduler=ImmediateScheduler.singleton())


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
        return subscribe_fused(
            source, observer.on_next, observer.on_error, observer.on_completed, scheduler
        )

    return Fused(subscribe)
