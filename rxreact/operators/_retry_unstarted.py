from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc

from rxreact.model.retry_policy import Backoff, retry_delay
from rxreact.rx._ordered_serial import OrderedSerialDisposable
from rxreact.scheduling import timer_scheduler

_T = TypeVar("_T")


def retry_unstarted_(
    max_retries: int, backoff: Backoff
) -> Callable[[Observable[_T]], Observable[_T]]:
    def retry_unstarted(source: Observable[_T]) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            timer = timer_scheduler(scheduler)
            # Ordered, not serial: an attempt that fails inside ``subscribe`` schedules its retry
            # before its own subscription is stored, which must not cancel that retry.
            current = OrderedSerialDisposable()
            retries = 0
            emitted = False

            def attempt(*_: Any) -> None:
                current.replace_with(
                    lambda: source.subscribe(
                        on_next, on_error, observer.on_completed, scheduler=scheduler
                    )
                )

            def on_next(value: _T) -> None:
                nonlocal emitted
                emitted = True
                observer.on_next(value)

            def on_error(error: Exception) -> None:
                nonlocal retries
                # Once something reached the subscriber a retry would repeat it: never then.
                delay = None if emitted else retry_delay(error, retries, max_retries, backoff)
                if delay is None:
                    observer.on_error(error)
                    return
                retries += 1
                current.replace_with(lambda: timer.schedule_relative(delay, attempt))

            attempt()
            return current

        return Observable(subscribe)

    return retry_unstarted
