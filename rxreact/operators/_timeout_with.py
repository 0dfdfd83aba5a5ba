from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SingleAssignmentDisposable

from rxreact.rx._ordered_serial import OrderedSerialDisposable

_T = TypeVar("_T")


def timeout_with_(
    seconds: float, fallback: Observable[_T], scheduler: abc.SchedulerBase
) -> Callable[[Observable[_T]], Observable[_T]]:
    def timeout_with(source: Observable[_T]) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], scheduler_: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            # RxPY's ``timeout`` decides who wins (the source or the timer) with unguarded
            # reads and writes: a timer firing on its thread while a value arrives on another
            # can let both through (a tool's result *and* its timeout). One lock decides here.
            lock = threading.Lock()
            generation = 0
            over = False  # a terminal notification or the fallback won
            timer = OrderedSerialDisposable()
            # Two slots, not one serial: a timer that fires before ``source.subscribe`` has
            # returned must not have its fallback's subscription replaced by the source's.
            source_subscription = SingleAssignmentDisposable()
            fallback_subscription = SingleAssignmentDisposable()

            def arm() -> None:
                armed = generation

                def fire(_: abc.SchedulerBase, __: Any = None) -> None:
                    nonlocal over
                    with lock:
                        if over or generation != armed:
                            return
                        over = True
                    source_subscription.dispose()
                    fallback_subscription.disposable = fallback.subscribe(
                        observer, scheduler=scheduler_
                    )

                timer.replace_with(lambda: scheduler.schedule_relative(seconds, fire))

            def on_next(value: _T) -> None:
                nonlocal generation
                with lock:
                    if over:
                        return
                    generation += 1
                observer.on_next(value)
                arm()

            def terminal(notify: Callable[[], None]) -> None:
                nonlocal over
                with lock:
                    if over:
                        return
                    over = True
                timer.dispose()
                notify()

            arm()
            source_subscription.disposable = source.subscribe(
                on_next,
                lambda error: terminal(lambda: observer.on_error(error)),
                lambda: terminal(observer.on_completed),
                scheduler=scheduler_,
            )
            return CompositeDisposable(source_subscription, fallback_subscription, timer)

        return Observable(subscribe)

    return timeout_with
