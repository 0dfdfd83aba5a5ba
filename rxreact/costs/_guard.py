"""``budget_guard``: a round's chunks, stopped when their projected cost crosses what is left.

::

    chunks:         -a--b--c--d--|           the projected cost grows with each chunk
    left = 2.5:     -a--b--X                 c crosses: the source disposed (socket closed),
                                             then BudgetExceededError
    final_answer:   -a--b--|                 or the round ends with what it has

A :class:`~rxreact.model.switch.SwitchChunk` (a fallback model moving on) adds the attempt it
leaves to the round's spend and prices the rest at the next model's prices.
"""

from __future__ import annotations

from collections.abc import Callable

from reactivex import Observable, abc

from rxreact.costs.budget import RoundPrices, Spend
from rxreact.errors import BudgetExceededError
from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk
from rxreact.model.switch import SwitchChunk
from rxreact.rx._fused import NOTHING, Fused, Relay, subscribe_observer

__all__ = ["budget_guard"]


def budget_guard(
    spend: Spend,
    run_cost: float,
    prices_for: Callable[[str], RoundPrices],
    first_model: str,
) -> Callable[[Observable[ChatChunk]], Observable[ChatChunk]]:
    """The operator for one round (``run_cost``: what the run spent before it;
    ``prices_for(model name)``: that model's prices for this request)."""

    def guard(source: Observable[ChatChunk]) -> Observable[ChatChunk]:
        def subscribe(
            observer: abc.ObserverBase[ChatChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            watch = _Watch(observer, spend, run_cost, prices_for(first_model), prices_for)
            watch.upstream = subscribe_observer(source, watch, scheduler)
            if watch.stopped:
                watch.upstream.dispose()
            return watch

        return Fused(subscribe)

    return guard


class _Watch(Relay, abc.DisposableBase):
    __slots__ = (
        "_earlier",
        "_prices",
        "_prices_for",
        "_run_cost",
        "_spend",
        "chars",
        "upstream",
        "usage",
    )

    def __init__(
        self,
        observer: abc.ObserverBase[ChatChunk],
        spend: Spend,
        run_cost: float,
        prices: RoundPrices,
        prices_for: Callable[[str], RoundPrices],
    ) -> None:
        super().__init__(observer)
        self._spend = spend
        self._run_cost = run_cost
        self._prices = prices
        self._prices_for = prices_for
        self._earlier = 0.0  # attempts of this round a fallback model moved away from
        self.chars = 0
        self.usage: Usage | None = None
        self.upstream: abc.DisposableBase = NOTHING

    def projected(self) -> float:
        return self._earlier + self._prices.projected(self.chars, self.usage)

    def on_next(self, chunk: ChatChunk) -> None:
        if self.stopped:
            return
        if chunk.replay and type(chunk) is SwitchChunk:
            self._earlier = self.projected()
            self._prices = self._prices_for(chunk.switch.to_model)
            self.chars, self.usage = 0, None
        else:
            self.chars += len(chunk.text or "") + len(chunk.reasoning or "")
            for delta in chunk.tool_calls:
                self.chars += len(delta.arguments or "")
            if chunk.usage is not None:
                self.usage = chunk.usage
        if self.projected() > self._spend.left(self._run_cost):
            self._cut()
            return
        self._observer.on_next(chunk)

    def _cut(self) -> None:
        self.stopped = True
        self.upstream.dispose()  # the model's stream: its socket closed now
        spend = self._spend
        spent = self.projected()
        spend.record(spent)
        total = spend.before + self._run_cost + spent
        if spend.budget.on_exceed == "final_answer":
            spend.cut = True
            self._observer.on_completed()
        else:
            self._observer.on_error(BudgetExceededError(total, spend.budget.usd, spend.budget.per))

    def dispose(self) -> None:
        self.stopped = True
        self.upstream.dispose()
