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
from rxreact.rx._fused import Fused, Keeper, subscribe_observer


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
        return subscribe_observer(self.source, _Ending(observer, self.state), scheduler)


class _Ending(Keeper):
    """Values and errors straight through; ``round_finished`` before the completion.
    Subscribed as it is (a :class:`Keeper`)."""

    __slots__ = ("observer", "on_next", "state", "stopped")

    def __init__(self, observer: abc.ObserverBase[Any], state: RoundState) -> None:
        self.observer = observer
        self.on_next = observer.on_next  # an attribute: one call per value, no hop through here
        self.state = state
        self.stopped = False

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self.observer.on_error(error)

    def on_completed(self) -> None:
        if self.stopped:
            return
        self.stopped = True
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
