"""One request's subscribe function and attempts, as two small objects instead of closures.

:meth:`HTTPChatModel._observable <rxreact.model.http.model.HTTPChatModel>` used to build a
subscribe closure, per subscription a ``content`` closure over a one-item list and an ``arun``
closure, and above them the two attempt closures of ``stream``/``complete``: some twenty
functions, cells and tuples that a streaming run keeps alive for its whole life, and that every
garbage collection walks (at thousands of concurrent runs, the collector's main work).
:class:`Exchange` (one per Observable) and :class:`_Attempts` (one per subscription) keep the
same state in slots; the Observable and the call hold their bound methods.

::

    Exchange(model, request, new_parser).subscribe:   --c--c--c--|   (the model's chunks)
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from reactivex import abc

from rxreact.messages import ChatRequest
from rxreact.model.http._aio import LoopCall
from rxreact.model.http._call import CallSettings, ModelCall
from rxreact.model.http._thread_call import ThreadCall
from rxreact.model.http.codec import StreamParser
from rxreact.scheduling import timer_scheduler

if TYPE_CHECKING:
    from rxreact.model.http.model import HTTPChatModel

__all__ = ["Exchange"]

_T = TypeVar("_T")


class Exchange:
    """A request to send on every subscription: streamed with parsers from ``new_parser``,
    or, when that is ``None``, as one whole response."""

    __slots__ = ("model", "new_parser", "request")

    def __init__(
        self,
        model: HTTPChatModel,
        request: ChatRequest,
        new_parser: Callable[[], StreamParser] | None,
    ) -> None:
        self.model = model
        self.request = request
        self.new_parser = new_parser

    def subscribe(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        model = self.model
        settings = CallSettings(
            model._timeouts, model._max_retries, model._backoff, timer_scheduler(scheduler)
        )
        attempts = _Attempts(self)
        call: ModelCall[Any]
        if model.io == "loop":
            call = LoopCall(attempts.arun, observer, settings)
        else:
            call = ThreadCall(attempts.run, observer, settings, model._io)
        return call.start()


class _Attempts:
    """One subscription's attempts: the body is encoded on the I/O thread, once for all."""

    __slots__ = ("body", "exchange")

    def __init__(self, exchange: Exchange) -> None:
        self.exchange = exchange
        self.body: bytes | None = None

    def content(self) -> bytes:
        if self.body is None:
            exchange = self.exchange
            self.body = exchange.model._encode(exchange.request, exchange.new_parser is not None)
        return self.body

    def run(self, call: ThreadCall[Any]) -> None:
        new_parser, model = self.exchange.new_parser, self.exchange.model
        if new_parser is None:
            model._attempt_complete(call, self.content())
        else:
            model._attempt_stream(call, self.content(), new_parser)

    def arun(self, call: LoopCall[Any]) -> Coroutine[Any, Any, None]:
        """The attempt's coroutine, returned for the call to await (a coroutine of its own
        that awaited it was one more coroutine alive as long as the stream)."""
        new_parser, model = self.exchange.new_parser, self.exchange.model
        if new_parser is None:
            return model._aattempt_complete(call, self.content())
        return model._aattempt_stream(call, self.content(), new_parser)
