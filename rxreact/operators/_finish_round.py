from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc

from rxreact.agent.round import RoundState
from rxreact.rx._fused import Fused, subscribe_fused


def finish_round_(state: RoundState) -> Callable[[Observable[Any]], Observable[Any]]:
    def finish_round(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            def on_completed() -> None:
                try:
                    event = state.finished_event()
                except Exception as error:
                    observer.on_error(error)
                    return
                observer.on_next(event)
                observer.on_completed()

            return subscribe_fused(
                source, observer.on_next, observer.on_error, on_completed, scheduler
            )

        return Fused(subscribe)

    return finish_round
