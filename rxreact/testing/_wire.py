"""The chat-completions dialect of the mock server: chunks, completions and errors as OpenAI
serializes them, and the request rules the real API enforces."""

from __future__ import annotations

import json
import time
from typing import Any

from rxreact.errors import ProviderStreamError
from rxreact.messages import ChatRequest
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.openai.request_codec import decode_request
from rxreact.model.openai.wire import DONE, parse_chunk
from rxreact.testing._api_rules import content_error, history_error
from rxreact.testing._dialect import kind_in_body

__all__ = [
    "CHAT_COMPLETIONS",
    "assemble_sse",
    "chunk_to_wire",
    "error_body",
    "error_object",
    "response_to_wire",
    "sse_event",
    "status_of",
]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def chunk_to_wire(chunk: ChatChunk, *, id: str, model: str, created: int) -> dict[str, Any]:
    """One ``chat.completion.chunk`` object as OpenAI streams it.

    A chunk with nothing but usage gets ``"choices": []`` (OpenAI's trailing usage chunk);
    reasoning is sent as ``reasoning_content``; a tool-call delta with an id gets
    ``"type": "function"``.
    """
    wire: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }
    delta: dict[str, Any] = {}
    if chunk.role is not None:
        delta["role"] = chunk.role
    if chunk.text is not None:
        delta["content"] = chunk.text
    if chunk.reasoning is not None:
        delta["reasoning_content"] = chunk.reasoning
    if chunk.tool_calls:
        delta["tool_calls"] = [_tool_call_delta(d) for d in chunk.tool_calls]
    usage_only = chunk.usage is not None and not delta and chunk.finish_reason is None
    wire["choices"] = (
        []
        if usage_only
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": chunk.finish_reason}]
    )
    if chunk.usage is not None:
        wire["usage"] = chunk.usage.model_dump(exclude_none=True)
    return wire


def response_to_wire(
    response: ModelResponse, *, id: str, model: str, created: int
) -> dict[str, Any]:
    """One non-streaming ``chat.completion`` object carrying ``response``."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.reasoning is not None:
        message["reasoning_content"] = response.reasoning
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls
        ]
    wire: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": response.finish_reason}],
    }
    if response.usage is not None:
        wire["usage"] = response.usage.model_dump(exclude_none=True)
    return wire


def _tool_call_delta(delta: ToolCallDelta) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if delta.index is not None:
        out["index"] = delta.index
    if delta.id is not None:
        out["id"] = delta.id
        out["type"] = "function"
    function: dict[str, Any] = {}
    if delta.name is not None:
        function["name"] = delta.name
    if delta.arguments is not None:
        function["arguments"] = delta.arguments
    out["function"] = function
    return out


def sse_event(obj: Any) -> bytes:
    """One ``data: <json>`` event, compact JSON as providers send it."""
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def error_object(error: Exception) -> dict[str, Any]:
    """The ``error`` object a provider would send for ``error``."""
    if isinstance(error, ProviderStreamError):
        return {"message": error.provider_message, "type": error.error_type, "code": error.code}
    message = getattr(error, "provider_message", None) or str(error) or type(error).__name__
    return {"message": message, "type": "server_error", "code": None}


def status_of(error: Exception) -> int:
    """The HTTP status for ``error`` in a non-streaming answer: its own, else 500."""
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and status >= 400 else 500


def assemble_sse(data: bytes) -> ModelResponse:
    """What a recorded stream assembles to (a non-streaming request for a :class:`RawSSE`)."""
    decoder = SSEDecoder()
    chunks: list[ChatChunk] = []
    for event in decoder.feed(data) + decoder.close():
        if event.data == DONE:
            break
        chunk = parse_chunk(event.data, event.event)
        if chunk is not None:
            chunks.append(chunk)
    return assemble(chunks)


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body for an HTTP error status."""
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    code = "rate_limit_exceeded" if status == 429 else None
    return {"error": {"message": message, "type": kind, "code": code}}


_DONE_EVENT = b"data: " + DONE.encode() + b"\n\n"


class _ChatWriter:
    """One ``chat.completion.chunk`` event per chunk, then ``[DONE]``."""

    __slots__ = ("_created", "_id", "_model")

    def __init__(self, model: str, number: int) -> None:
        self._id, self._model, self._created = f"chatcmpl-mock-{number}", model, int(time.time())

    def start(self) -> list[bytes]:
        return []

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        wire = chunk_to_wire(chunk, id=self._id, model=self._model, created=self._created)
        return [sse_event(wire)]

    def fail(self, error: Exception) -> list[bytes]:
        return [sse_event({"error": error_object(error)})]

    def end(self) -> list[bytes]:
        return [_DONE_EVENT]


class _ChatCompletions:
    """``POST /v1/chat/completions``."""

    path = "/chat/completions"

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        return kind_in_body(body)

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        return decode_request(body)

    def problem(self, body: dict[str, Any]) -> str | None:
        return history_error(body) or content_error(body)

    def writer(self, model: str, number: int) -> _ChatWriter:
        return _ChatWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        return response_to_wire(
            response, id=f"chatcmpl-mock-{number}", model=model, created=int(time.time())
        )

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return error_body(status, message)

    def assemble(self, data: bytes) -> ModelResponse:
        return assemble_sse(data)


CHAT_COMPLETIONS = _ChatCompletions()
"""The chat-completions dialect."""
