from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SerialDisposable, SingleAssignmentDisposable
from reactivex.scheduler import CurrentThreadScheduler

from rxreact._ordered_serial import OrderedSerialDisposable

_T = TypeVar("_T")


def concat_steps_(steps: Iterable[Observable[_T]]) -> Observable[_T]:
    def subscribe(
        observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        scheduler = scheduler_ or CurrentThreadScheduler.singleton()
        iterator = iter(steps)
        # The next step's scheduled start. ``reactivex.concat_with_iterable`` keeps it in a
        # SerialDisposable assigned after ``schedule`` returns: a thread preempted there
        # disposed the *following* step, scheduled meanwhile, and the run stopped for good.
        pending = OrderedSerialDisposable()
        running = SerialDisposable()  # the current step's subscription

        def action(_: abc.SchedulerBase, __: Any = None) -> None:
            if pending.is_disposed:
                return
            try:
                step = next(iterator)
            except StopIteration:
                observer.on_completed()
                return
            except Exception as error:
                observer.on_error(error)
                return
            # Set before subscribing: the step's completion schedules the next action, which
            # replaces ``running`` in turn, so the two assignments never cross.
            inner = SingleAssignmentDisposable()
            running.disposable = inner
            inner.disposable = step.subscribe(
                observer.on_next, observer.on_error, start_next, scheduler=scheduler_
            )

        def start_next() -> None:
            pending.replace_with(lambda: scheduler.schedule(action))

        start_next()
        return CompositeDisposable(pending, running)

    return Observable(subscribe)
