"""The wire formats the mock server speaks: one :class:`Dialect` per API, chosen by the path.

The handler (:mod:`rxreact.testing._handler`) owns HTTP: reading the body, pauses, hangs,
disconnects, chunked framing. A dialect owns what the bytes mean for its API: how a request
body decodes to a :class:`~rxreact.messages.ChatRequest`, which bodies the real API refuses
(HTTP 400), how a stream of :class:`~rxreact.model.chunks.ChatChunk` s is written as that
API's events (a :class:`StreamWriter` per response: some formats open and close blocks), how a
whole response and an error body look.
"""

from __future__ import annotations

from typing import Any, Protocol

from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk, ModelResponse

__all__ = ["Dialect", "StreamWriter", "dialect_for", "kind_in_body"]


class StreamWriter(Protocol):
    """Writes one streamed response as SSE events (each a complete ``event:``/``data:`` block)."""

    def start(self) -> list[bytes]:
        """The events before the first chunk (``message_start``...)."""
        ...

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        """The events for one chunk."""
        ...

    def fail(self, error: Exception) -> list[bytes]:
        """The in-stream error event for ``error`` (the stream ends after it)."""
        ...

    def end(self) -> list[bytes]:
        """The events that end a complete response (``[DONE]``, ``message_stop``...)."""
        ...


class Dialect(Protocol):
    """One API's wire format, as the mock server speaks it."""

    path: str
    """The path suffix it answers (``/chat/completions``)."""

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        """A request body as a :class:`ChatRequest` (for script functions)."""
        ...

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        """Whether the request asks for a stream, and the model it names (:func:`kind_in_body`
        where the body says both; Gemini's path does)."""
        ...

    def problem(self, body: dict[str, Any]) -> str | None:
        """The 400 message the real API gives for this body, if any."""
        ...

    def writer(self, model: str, number: int) -> StreamWriter:
        """A writer for the streamed response to request ``number`` (1-based)."""
        ...

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        """The body of a whole (non-streaming) response."""
        ...

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        """The body of an HTTP error response."""
        ...

    def assemble(self, data: bytes) -> ModelResponse:
        """What a recorded stream of this format assembles to (RawSSE, not streamed)."""
        ...


def kind_in_body(body: dict[str, Any]) -> tuple[bool, str]:
    """``stream`` and ``model`` as the body gives them (every API but Gemini's)."""
    return bool(body.get("stream")), str(body.get("model") or "mock-model")


def dialect_for(path: str) -> Dialect | None:
    """The dialect that answers ``path``, or ``None`` (404)."""
    path = path.split("?", 1)[0].rstrip("/")
    for dialect in _dialects():
        if path.endswith(dialect.path):
            return dialect
    return None


def _dialects() -> tuple[Dialect, ...]:
    # Imported here: the dialect modules import the model layer, which is heavier than this.
    from rxreact.testing._anthropic import MESSAGES
    from rxreact.testing._bedrock import BEDROCK_STREAM, BEDROCK_WHOLE
    from rxreact.testing._gemini import GEMINI_STREAM, GEMINI_WHOLE
    from rxreact.testing._gemini_openai import GEMINI_OPENAI
    from rxreact.testing._responses import LLAMA_SERVER_RESPONSES, RESPONSES
    from rxreact.testing._wire import CHAT_COMPLETIONS

    # The first whose path ends the request's answers: a strict variant before its base.
    return (
        GEMINI_OPENAI,
        CHAT_COMPLETIONS,
        MESSAGES,
        LLAMA_SERVER_RESPONSES,
        RESPONSES,
        GEMINI_STREAM,
        GEMINI_WHOLE,
        BEDROCK_STREAM,
        BEDROCK_WHOLE,
    )
