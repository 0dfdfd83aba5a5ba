"""``finish_round``'s subscription: one slotted object, not a closure per subscription.

::

    events:  -a--b--|
    result:  -a--b--F|          F: round_finished, sent from the source's completion
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc

from rxreact.agent.round import RoundState
from rxreact.rx._fused import Fused, subscribe_fused


def finish_round_(state: RoundState) -> Callable[[Observable[Any]], Observable[Any]]:
    def finish_round(source: Observable[Any]) -> Observable[Any]:
        return Fused(_FinishRound(source, state).subscribe)

    return finish_round


class _FinishRound:
    """The source and the round: what each subscription needs, in slots (a closure's function,
    tuple and cells stayed alive as long as the round, for every collection to walk)."""

    __slots__ = ("source", "state")

    def __init__(self, source: Observable[Any], state: RoundState) -> None:
        self.source = source
        self.state = state

    def subscribe(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        ending = _Ending(observer, self.state)
        return subscribe_fused(
            self.source, observer.on_next, observer.on_error, ending.on_completed, scheduler
        )


class _Ending:
    __slots__ = ("observer", "state")

    def __init__(self, observer: abc.ObserverBase[Any], state: RoundState) -> None:
        self.observer = observer
        self.state = state

    def on_completed(self) -> None:
        # ``round_finished`` is sent from the source's completion, so nothing upstream can take
        # back an exception the subscriber raises on it: the source has ended and its
        # callbacks pass nothing more. Caught here, it ends the round through ``on_error``;
        # escaping, it reached the thread's top (a pool logged it) and the run waited forever
        # for an end that no one was left to send.
        observer = self.observer
        try:
            observer.on_next(self.state.finished_event())
        except Exception as error:
            observer.on_error(error)
            return
        observer.on_completed()
