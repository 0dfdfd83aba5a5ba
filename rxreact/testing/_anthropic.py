"""The Anthropic Messages dialect of the mock server (``POST /v1/messages``): events, messages
and errors as Anthropic serializes them, and the request rules it enforces
(:mod:`rxreact.testing._anthropic_rules`).

A scripted reply's chunks become content blocks: reasoning a ``thinking`` block (closed with
a signature the server can verify when it comes back), text a ``text`` block, each tool call
a ``tool_use`` block; an ``anthropic`` ``redacted_thinking`` replay item a redacted block.
The finish reason becomes ``message_delta``'s ``stop_reason`` (the chunk's
``provider_finish_reason`` when it has one, such as ``pause_turn``), the usage Anthropic's.
:class:`~rxreact.model.scripted.replies.Fail` is an ``error`` event with the error's
``error_type`` (``overloaded_error``...).
"""

from __future__ import annotations

import json
from typing import Any

from rxreact.errors import ProviderStreamError
from rxreact.messages import ChatRequest, Usage
from rxreact.model.anthropic.wire import PROVIDER, MessagesStreamParser
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http.sse import SSEDecoder
from rxreact.testing._anthropic_decode import decode_request
from rxreact.testing._anthropic_rules import check_messages_body, issue_redacted, sign_thinking
from rxreact.testing._dialect import kind_in_body

__all__ = ["MESSAGES"]

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _event(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return f"event: {obj['type']}\ndata: {data}\n\n".encode()


def _usage(usage: Usage | None) -> dict[str, Any]:
    """Our usage as Anthropic reports it (input tokens without the cached ones)."""
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0}
    extras = {k: v for k, v in (usage.model_extra or {}).items() if k.startswith("cache_") and v}
    uncached = (usage.prompt_tokens or 0) - sum(extras.values())
    return {"input_tokens": uncached, "output_tokens": usage.completion_tokens or 0, **extras}


def _stop_reason(chunk: ChatChunk | ModelResponse) -> str:
    raw = chunk.provider_finish_reason
    return raw or _STOP_REASONS.get(chunk.finish_reason or "stop", "end_turn")


class _MessagesWriter:
    """One streamed message: blocks opened, filled and closed as the chunks come."""

    def __init__(self, model: str, number: int) -> None:
        self._id, self._model = f"msg_mock_{number}", model
        self._index = -1
        self._open: str | None = None  # the kind of the open block
        self._thinking: list[str] = []
        self._calls: dict[int | None, int] = {}  # a call's delta index → its block index
        self._finished = False

    def start(self) -> list[bytes]:
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 1},
        }
        return [_event({"type": "message_start", "message": message})]

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        out: list[bytes] = []
        if chunk.reasoning:
            self._ensure(out, "thinking", {"type": "thinking", "thinking": "", "signature": ""})
            self._thinking.append(chunk.reasoning)
            out.append(self._delta({"type": "thinking_delta", "thinking": chunk.reasoning}))
        if chunk.text:
            self._ensure(out, "text", {"type": "text", "text": ""})
            out.append(self._delta({"type": "text_delta", "text": chunk.text}))
        for delta in chunk.tool_calls:
            if delta.index not in self._calls or delta.id:
                self._close(out)
                call_id = delta.id or f"toolu_mock_{self._index + 1}"
                block: dict[str, Any] = {
                    "type": "tool_use",
                    "id": call_id,
                    "name": delta.name,
                    "input": {},
                }
                self._open_block(out, "tool_use", block)
                self._calls[delta.index] = self._index
            if delta.arguments:
                piece = {"type": "input_json_delta", "partial_json": delta.arguments}
                out.append(self._delta(piece, self._calls[delta.index]))
        for item in chunk.replay:
            if item.provider == PROVIDER and item.data.get("type") == "redacted_thinking":
                self._close(out)
                block = {"type": "redacted_thinking", "data": issue_redacted(item.data["data"])}
                self._open_block(out, "redacted_thinking", block)
                self._close(out)
        if chunk.finish_reason is not None or chunk.provider_finish_reason is not None:
            self._close(out)
            self._finished = True
            stop = {"stop_reason": _stop_reason(chunk), "stop_sequence": None}
            out.append(
                _event({"type": "message_delta", "delta": stop, "usage": _usage(chunk.usage)})
            )
        return out

    def fail(self, error: Exception) -> list[bytes]:
        if isinstance(error, ProviderStreamError):
            kind, message = error.error_type or "api_error", error.provider_message
        else:
            kind, message = "api_error", str(error) or type(error).__name__
        return [_event({"type": "error", "error": {"type": kind, "message": message}})]

    def end(self) -> list[bytes]:
        out: list[bytes] = []
        if not self._finished:
            self._close(out)
            delta = {"stop_reason": "end_turn", "stop_sequence": None}
            out.append(_event({"type": "message_delta", "delta": delta, "usage": _usage(None)}))
        out.append(_event({"type": "message_stop"}))
        return out

    def _ensure(self, out: list[bytes], kind: str, block: dict[str, Any]) -> None:
        if self._open != kind:
            self._close(out)
            self._open_block(out, kind, block)

    def _open_block(self, out: list[bytes], kind: str, block: dict[str, Any]) -> None:
        self._index += 1
        self._open = kind
        start = {"type": "content_block_start", "index": self._index, "content_block": block}
        out.append(_event(start))

    def _close(self, out: list[bytes]) -> None:
        if self._open is None:
            return
        if self._open == "thinking":
            signature = sign_thinking("".join(self._thinking))
            out.append(self._delta({"type": "signature_delta", "signature": signature}))
            self._thinking = []
        out.append(_event({"type": "content_block_stop", "index": self._index}))
        self._open = None

    def _delta(self, delta: dict[str, Any], index: int | None = None) -> bytes:
        at = self._index if index is None else index
        return _event({"type": "content_block_delta", "index": at, "delta": delta})


class _Messages:
    """``POST /v1/messages``."""

    path = "/v1/messages"

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        return kind_in_body(body)

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        return decode_request(body)

    def problem(self, body: dict[str, Any]) -> str | None:
        return check_messages_body(body)

    def writer(self, model: str, number: int) -> _MessagesWriter:
        return _MessagesWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if response.reasoning:
            signature = sign_thinking(response.reasoning)
            content.append(
                {"type": "thinking", "thinking": response.reasoning, "signature": signature}
            )
        if response.content:
            content.append({"type": "text", "text": response.content})
        for call in response.tool_calls:
            try:
                arguments = json.loads(call.arguments) if call.arguments else {}
            except ValueError:
                arguments = {}
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
            )
        return {
            "id": f"msg_mock_{number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": _stop_reason(response),
            "stop_sequence": None,
            "usage": _usage(response.usage),
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def assemble(self, data: bytes) -> ModelResponse:
        decoder, parser, assembler = SSEDecoder(), MessagesStreamParser(), ResponseAssembler()
        for event in decoder.feed(data) + decoder.close():
            chunk = parser.parse(event.data, event.event)
            if chunk is not None:
                assembler.add(chunk)
            if parser.done:
                break
        return assembler.response()


MESSAGES = _Messages()
"""The Anthropic Messages dialect."""
