"""``output_partials``: the typed answer parsed so far, from the answering round's text.

::

    round:   -m-(tt)--t-(tt)---F|        m round_mode_decided(final_answer), t text_delta,
    result:  -m-(ttp)-t-(ttp)--F|        F round_finished; p output_partial: at the end of
                                         each delivery batch whose chunks changed the value
    late:    -m-tp-t-M-...               M round_mode_decided(tool_call) after partials:
    result:  -m-tp-t-MR-...              R output_reset (the round calls tools: no answer)

The round's text is read once, incrementally (:class:`~rxreact.checks.partial_json.PartialJSON`):
each piece costs its own characters, never the whole text so far. A partial goes out once per
delivery batch (``deliver_on`` drains every chunk queued since its last drain in one action
and then calls ``batch_end``): the batch's text is read then, in one piece, so a chunk costs
one ``list.append`` on its way and a busy process sends fewer, larger steps while a paced
stream sends one per chunk or two; the last is sent before ``round_finished``. Only
the root run's own text is read (a nested agent's events never reach its caller's rounds).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc

from rxreact.checks.partial_json import PartialJSON
from rxreact.events import OutputReset, RoundModeDecided, TextDelta
from rxreact.events._deltas import unvalidated
from rxreact.events._output import OutputPartial
from rxreact.rx._fused import Fused, Keeper, subscribe_observer

__all__ = ["TOOL_ROUND_REASON", "output_partials_"]

TOOL_ROUND_REASON = "the round called tools: it is not the answer"
"""``output_reset.reason`` for partials of a round that turned out to call tools."""


def output_partials_(round_number: int) -> Callable[[Observable[Any]], Observable[Any]]:
    def output_partials(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return subscribe_observer(source, _Partials(observer, round_number), scheduler)

        return Fused(subscribe)

    return output_partials


class _Partials(Keeper):
    """Every event through; after a text delta, the value so far when it changed.
    Subscribed as it is (a :class:`Keeper`)."""

    __slots__ = ("_emit", "_observer", "_parser", "_round", "_shown", "_text", "stopped")

    def __init__(self, observer: abc.ObserverBase[Any], round_number: int) -> None:
        self._observer = observer
        self._emit = observer.on_next
        self._round = round_number
        self._parser = PartialJSON()
        self._shown = False
        self._text: list[str] = []  # the text of the batch being delivered, not yet read
        self.stopped = False

    def on_next(self, event: Any) -> None:
        emit = self._emit
        emit(event)
        kind = type(event)
        if kind is TextDelta:
            self._text.append(event.delta)
        elif kind is RoundModeDecided and event.mode == "tool_call":
            self._text = []
            if self._shown:
                self._shown = False
                emit(OutputReset(round=self._round, reason=TOOL_ROUND_REASON))

    def batch_end(self) -> None:
        """The chunks delivered together are through: the value so far, if it changed."""
        text = self._text
        if not text or self.stopped:
            return
        self._text = []
        parser = self._parser
        parser.feed(text[0] if len(text) == 1 else "".join(text))
        if parser.changed:
            self._shown = True
            self._emit(unvalidated(OutputPartial, self._round, "output", parser.snapshot()))

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self._observer.on_error(error)

    def on_completed(self) -> None:
        if not self.stopped:
            self.batch_end()  # a source that never batched (no deliver_on) too
            self.stopped = True
            self._observer.on_completed()
