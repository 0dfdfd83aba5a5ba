from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc

from rxreact.model.chunks import ChatChunk
from rxreact.round import RoundState


def process_chunk_(state: RoundState) -> Callable[[Observable[ChatChunk]], Observable[Any]]:
    def process_chunk(source: Observable[ChatChunk]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            emit = observer.on_next

            def on_next(chunk: ChatChunk) -> None:
                try:
                    state.process(chunk, emit)
                except Exception as error:  # a bug in state handling must not kill the thread
                    observer.on_error(error)

            return source.subscribe(
                on_next, observer.on_error, observer.on_completed, scheduler=scheduler
            )

        return Observable(subscribe)

    return process_chunk
