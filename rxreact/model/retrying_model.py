"""RetryingModel: retry policy for any chat model, as an operator on its stream."""

from __future__ import annotations

from reactivex import Observable

from rxreact.messages import ChatRequest
from rxreact.model.base import ChatModel
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.retry_policy import Backoff
from rxreact.operators import retry_unstarted

__all__ = ["RetryingModel"]


class RetryingModel:
    """Wraps a :class:`ChatModel` so its streams are retried with backoff before they start.

    ``OpenAIChatModel`` retries on its own; this gives the same policy to any model, e.g. a
    ``ScriptedModel`` in a virtual-time test of an agent's retry behaviour::

        model = RetryingModel(ScriptedModel([HTTPErrorReply(503), text_reply("ok")]))

    ``complete`` is passed through unchanged (blocking calls keep the inner model's policy).
    """

    def __init__(self, model: ChatModel, *, max_retries: int = 2, backoff: Backoff | None = None):
        self.model = model
        self.max_retries = max_retries
        self.backoff: Backoff = backoff or Backoff()

    def __repr__(self) -> str:
        return f"RetryingModel({self.model!r}, max_retries={self.max_retries})"

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """The inner model's stream, resubscribed after retryable errors before any chunk."""
        return self.model.stream(request).pipe(retry_unstarted(self.max_retries, self.backoff))

    def complete(self, request: ChatRequest) -> ModelResponse:
        """The inner model's ``complete``."""
        return self.model.complete(request)
