from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc

from rxreact.agent.round import RoundState
from rxreact.model.chunks import ChatChunk
from rxreact.rx._fused import Fused, Keeper, subscribe_observer


def process_chunk_(state: RoundState) -> Callable[[Observable[ChatChunk]], Observable[Any]]:
    def process_chunk(source: Observable[ChatChunk]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return subscribe_observer(source, _Chunks(state, observer), scheduler)

        return Fused(subscribe)

    return process_chunk


class _Chunks(Keeper):
    """The round's chunks into its state; a failure in the state handling ends the stream
    (and nothing passes after it). Subscribed as it is (a :class:`Keeper`)."""

    __slots__ = ("_emit", "_observer", "_state", "batch_end", "stopped")

    def __init__(self, state: RoundState, observer: abc.ObserverBase[Any]) -> None:
        self._state = state
        self._observer = observer
        self._emit = observer.on_next
        self.stopped = False
        # The end of a delivery batch, passed on to an observer that asks (deliver_on).
        self.batch_end: Callable[[], None] | None = getattr(observer, "batch_end", None)

    def on_next(self, chunk: ChatChunk) -> None:
        if self.stopped:
            return
        try:
            self._state.process(chunk, self._emit)
        except Exception as error:  # a bug in state handling must not kill the thread
            self.stopped = True
            self._observer.on_error(error)

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self._observer.on_error(error)

    def on_completed(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._observer.on_completed()
