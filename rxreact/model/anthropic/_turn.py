"""One subscription of :meth:`AnthropicModel.stream
<rxreact.model.anthropic.client.AnthropicModel.stream>`: the message stream, and the follow-up
requests of a turn the server paused, as one stream.

::

    message 1:   --t--t--|                    stop_reason pause_turn: no finish reason
    message 2:            --t--t--f--|        the assistant content so far sent back
    stream():    --t--t-----t--t--f--|

Each message is one request of the shared transport (retried before its own first chunk).
Disposing disposes every request of the turn, the finished ones too: a request's subscription
is only freed by reference counting once disposed (as the agent does at the end of a round).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from reactivex import abc

from rxreact.messages import ChatRequest
from rxreact.model.anthropic.wire import PAUSE_TURN, Carry, MessagesStreamParser
from rxreact.model.chunks import ChatChunk
from rxreact.model.http.codec import StreamParser
from rxreact.rx._fused import subscribe_fused

if TYPE_CHECKING:
    from rxreact.model.anthropic.client import AnthropicModel

__all__ = ["TurnSubscription"]

Continue = Callable[[ChatRequest, Carry], ChatRequest]
"""The follow-up request of a paused turn: the original one and what the messages left."""


class TurnSubscription(abc.DisposableBase):
    """Streams ``request``, then a follow-up request for as long as the server pauses the turn
    (at most ``model.max_pause_turns``; past them the answer ends as ``length``). Call
    :meth:`start` once; disposing cancels whichever request is running."""

    __slots__ = (
        "_carry",
        "_continued",
        "_disposed",
        "_held",
        "_lock",
        "_model",
        "_observer",
        "_parser",
        "_pauses",
        "_request",
        "_scheduler",
    )

    def __init__(
        self,
        model: AnthropicModel,
        request: ChatRequest,
        continued: Continue,
        observer: abc.ObserverBase[ChatChunk],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        self._model = model
        self._request = request
        self._continued = continued
        self._observer = observer
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._held: list[abc.DisposableBase] = []
        """The subscriptions of the requests sent so far (the last one may be running)."""
        self._disposed = False
        self._carry: Carry | None = None
        self._parser: MessagesStreamParser | None = None
        self._pauses = 0

    def start(self) -> None:
        """Send the first request."""
        self._send(self._request)

    def dispose(self) -> None:
        with self._lock:
            held, self._held = self._held, []
            self._disposed = True
        for subscription in held:
            subscription.dispose()

    def _send(self, turn: ChatRequest) -> None:
        inner = subscribe_fused(
            self._model._stream(turn, self._new_parser),
            self._observer.on_next,
            self._observer.on_error,
            self._on_completed,
            self._scheduler,
        )
        with self._lock:
            disposed = self._disposed
            if not disposed:
                self._held.append(inner)
        if disposed:
            inner.dispose()

    def _new_parser(self) -> StreamParser:
        carry = self._carry
        self._parser = MessagesStreamParser(carry.copy() if carry is not None else None)
        return self._parser

    def _on_completed(self) -> None:
        parser = self._parser
        if parser is None or not parser.paused:
            self._observer.on_completed()
            return
        carry = self._carry = parser.continuation()
        if self._pauses >= self._model.max_pause_turns:
            end = ChatChunk(
                finish_reason="length", usage=carry.usage, provider_finish_reason=PAUSE_TURN
            )
            self._observer.on_next(end)
            self._observer.on_completed()
            return
        self._pauses += 1
        if not self._disposed:  # a dispose from now on also disposes the follow-up
            self._send(self._continued(self._request, carry))
