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
                # ``round_finished`` is sent from the source's completion, so nothing upstream
                # can take back an exception the subscriber raises on it: the source has ended
                # and its callbacks pass nothing more. Caught here, it ends the round through
                # ``on_error``; escaping, it reached the thread's top (a pool logged it) and
                # the run waited forever for an end that no one was left to send.
                try:
                    observer.on_next(state.finished_event())
                except Exception as error:
                    observer.on_error(error)
                    return
                observer.on_completed()

            return subscribe_fused(
                source, observer.on_next, observer.on_error, on_completed, scheduler
            )

        return Fused(subscribe)

    return finish_round
