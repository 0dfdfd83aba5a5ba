"""The contract every chat model implements."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from reactivex import Observable

from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk, ModelResponse

__all__ = ["ChatModel"]


@runtime_checkable
class ChatModel(Protocol):
    """A chat-completions model.

    ``stream`` is cold: nothing happens until subscription, each subscription is one request.
    Time-dependent work (pacing, timeouts, retry backoff) runs on the scheduler given at
    subscribe time (``observable.subscribe(observer, scheduler=...)``) when there is one, so a
    ``TestScheduler`` drives it in virtual time. Disposing the subscription cancels the request.

    Assembling the chunks of ``stream(request)`` gives the ``ModelResponse`` that
    ``complete(request)`` returns for the same script.
    """

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """Stream one response as chunks; errors arrive as ``rxreact.ModelError`` subclasses."""
        ...

    def complete(self, request: ChatRequest) -> ModelResponse:
        """Request one whole response (blocking, non-streaming)."""
        ...
