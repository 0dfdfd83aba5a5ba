"""Gemini's OpenAI-compatible chat completions (``POST /v1beta/openai/chat/completions``), as
strict as Gemini 3 is with thought signatures.

Streams are written as Gemini writes them: each function call arrives whole, in one delta
(with the finish reason), and the first call of a response carries its thought signature,
``"extra_content": {"google": {"thought_signature": ...}}`` (of parallel calls only the first
has one). A request is refused with HTTP 400 INVALID_ARGUMENT, in Gemini's error body, when
the first call of a step of the current turn (the assistant messages after the last user
message) comes back without a signature, and when a signature comes back changed or on
another call; Google's documented placeholder is taken anywhere
(:mod:`rxreact.testing._gemini_signatures`). The chat-completions rules of
:mod:`rxreact.testing._api_rules` apply too.
"""

from __future__ import annotations

import json
from typing import Any

from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.testing._api_rules import content_error, history_error
from rxreact.testing._gemini_signatures import sign_call, signature_matches
from rxreact.testing._wire import _ChatCompletions, _ChatWriter, sse_event

__all__ = ["GEMINI_OPENAI", "gemini_error_body", "signature_error"]

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required for "
    "tools to work correctly, and missing thought_signature may lead to degraded model "
    "performance. Additional data, function call `default_api:{name}` , position {position}. "
    "please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)


def gemini_error_body(status: int, message: str) -> dict[str, Any]:
    """An error body as Google's APIs send it (``code``, ``message``, ``status``)."""
    kind = _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    return {"error": {"code": status, "message": message, "status": kind}}


def signature_error(steps: list[list[tuple[str, Any, Any]]], turn_start: int) -> str | None:
    """Gemini's 400 for the function calls of a history, if any.

    Args:
        steps: per model message, its calls as ``(name, arguments, signature)``, in order.
        turn_start: the number of steps before the current turn (not checked for presence).
    """
    position = 0
    for number, calls in enumerate(steps):
        for i, (name, arguments, signature) in enumerate(calls):
            position += 1
            if signature is None:
                if i == 0 and number >= turn_start:
                    return _MISSING.format(name=name, position=position)
            elif not signature_matches(signature, name, arguments):
                return "Corrupted thought signature."
    return None


def _signature(call: dict[str, Any]) -> Any:
    google = (call.get("extra_content") or {}).get("google") or {}
    return google.get("thought_signature") if isinstance(google, dict) else None


def _compat_signature_error(body: dict[str, Any]) -> str | None:
    messages = [m for m in body.get("messages") or () if isinstance(m, dict)]
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    steps: list[list[tuple[str, Any, Any]]] = []
    turn_start = 0
    for i, message in enumerate(messages):
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        if i < last_user:
            turn_start += 1
        steps.append(
            [
                (
                    str((c.get("function") or {}).get("name")),
                    (c.get("function") or {}).get("arguments"),
                    _signature(c),
                )
                for c in calls
            ]
        )
    return signature_error(steps, turn_start)


class _GeminiChatWriter(_ChatWriter):
    """Text as it comes; the function calls held and written whole, with the finish reason."""

    __slots__ = ("_calls",)

    def __init__(self, model: str, number: int) -> None:
        super().__init__(model, number)
        self._calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        for delta in chunk.tool_calls:
            call = self._calls.setdefault(delta.index or 0, ["", "", ""])
            call[0] = call[0] or delta.id or ""
            call[1] = call[1] or delta.name or ""
            call[2] += delta.arguments or ""
        chunk = chunk._replace(tool_calls=())
        if chunk.finish_reason is not None and self._calls:
            return self._whole_calls(chunk)
        if chunk == ChatChunk():
            return []
        return super().chunk(chunk)

    def end(self) -> list[bytes]:
        return (self._whole_calls(ChatChunk()) if self._calls else []) + super().end()

    def _whole_calls(self, chunk: ChatChunk) -> list[bytes]:
        deltas = tuple(ToolCallDelta(i, *call) for i, call in sorted(self._calls.items()))
        wire = super().chunk(chunk._replace(tool_calls=deltas))
        self._calls = {}
        return [_signed(wire[0], deltas[0])]


def _signed(event: bytes, first: ToolCallDelta) -> bytes:
    obj = json.loads(event.removeprefix(b"data: "))
    call = obj["choices"][0]["delta"]["tool_calls"][0]
    signature = sign_call(first.name or "", first.arguments)
    call["extra_content"] = {"google": {"thought_signature": signature}}
    return sse_event(obj)


class _GeminiOpenAI(_ChatCompletions):
    """``POST /v1beta/openai/chat/completions``."""

    path = "/openai/chat/completions"

    def problem(self, body: dict[str, Any]) -> str | None:
        return history_error(body) or content_error(body) or _compat_signature_error(body)

    def writer(self, model: str, number: int) -> _GeminiChatWriter:
        return _GeminiChatWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        wire = super().response(response, model, number)
        calls = wire["choices"][0]["message"].get("tool_calls")
        if calls:
            first = response.tool_calls[0]
            signature = sign_call(first.name, first.arguments)
            calls[0]["extra_content"] = {"google": {"thought_signature": signature}}
        return wire

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return gemini_error_body(status, message)


GEMINI_OPENAI = _GeminiOpenAI()
"""Gemini's OpenAI-compatible dialect (base URL ``origin + "/v1beta/openai"``)."""
