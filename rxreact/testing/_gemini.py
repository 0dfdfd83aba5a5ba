"""Gemini's native API as the mock speaks it: ``POST /v1beta/models/{model}:streamGenerateContent
?alt=sse`` (a stream) and ``:generateContent`` (a whole answer), chosen by the path.

Each SSE event is a whole ``GenerateContentResponse``: text as ``text`` parts, reasoning as
``"thought": true`` parts, the running ``usageMetadata``, and no ``[DONE]``. Function calls
arrive whole, with the finish reason, without ids (the client makes its own), the first of
them with a thought signature (of parallel calls only the first has one); an answer without
calls ends with an empty text part carrying the signature of its text. A script's
``content_filter`` finish is ``SAFETY``; its :class:`~rxreact.model.scripted.replies.Fail` an
``{"error": ...}`` event with Google's ``code``, ``message`` and ``status``. The requests it
refuses, as Gemini does: :mod:`rxreact.testing._gemini_request`.
"""

from __future__ import annotations

import json
from typing import Any

from rxreact.messages import ChatRequest, Usage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.gemini.wire import GeminiStreamParser
from rxreact.model.http.sse import SSEDecoder
from rxreact.testing._gemini_openai import gemini_error_body
from rxreact.testing._gemini_request import decode_request, request_problem
from rxreact.testing._gemini_signatures import sign_call, sign_text
from rxreact.testing._wire import error_object, sse_event, status_of

__all__ = ["GEMINI_STREAM", "GEMINI_WHOLE"]

_REASONS = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def usage_metadata(usage: Usage) -> dict[str, Any]:
    """Our usage as Gemini counts it (thoughts apart from the candidates' tokens)."""
    extras = usage.__pydantic_extra__ or {}
    thoughts = (extras.get("completion_tokens_details") or {}).get("reasoning_tokens")
    cached = (extras.get("prompt_tokens_details") or {}).get("cached_tokens")
    meta: dict[str, Any] = {}
    if usage.prompt_tokens is not None:
        meta["promptTokenCount"] = usage.prompt_tokens
    if usage.completion_tokens is not None:
        meta["candidatesTokenCount"] = usage.completion_tokens - (thoughts or 0)
    if usage.total_tokens is not None:
        meta["totalTokenCount"] = usage.total_tokens
    if thoughts is not None:
        meta["thoughtsTokenCount"] = thoughts
    if cached is not None:
        meta["cachedContentTokenCount"] = cached
    return meta


class _GeminiWriter:
    """One ``GenerateContentResponse`` event per chunk; the calls held and written whole."""

    __slots__ = ("_calls", "_id", "_model", "_text")

    def __init__(self, model: str, number: int) -> None:
        self._id, self._model = f"mock-response-{number}", model
        self._calls: dict[int, list[str]] = {}  # index -> [name, arguments]
        self._text: list[str] = []

    def start(self) -> list[bytes]:
        return []

    def _event(self, parts: list[dict[str, Any]], chunk: ChatChunk) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if chunk.finish_reason is not None:
            candidate["finishReason"] = _REASONS.get(chunk.finish_reason, "OTHER")
        event: dict[str, Any] = {"candidates": [candidate]}
        if chunk.usage is not None:
            event["usageMetadata"] = usage_metadata(chunk.usage)
        event["modelVersion"] = self._model
        event["responseId"] = self._id
        return event

    def _parts(self, reasoning: str | None, text: str | None) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        if reasoning:
            parts.append({"text": reasoning, "thought": True})
        if text:
            self._text.append(text)
            parts.append({"text": text})
        return parts

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        parts = self._parts(chunk.reasoning, chunk.text)
        for delta in chunk.tool_calls:
            call = self._calls.setdefault(delta.index or 0, ["", ""])
            call[0] = call[0] or delta.name or ""
            call[1] += delta.arguments or ""
        if chunk.finish_reason is not None:
            parts += self._ending()
        if not parts and chunk.finish_reason is None and chunk.usage is None:
            return []
        return [sse_event(self._event(parts, chunk))]

    def _ending(self) -> list[dict[str, Any]]:
        if not self._calls:
            return [{"text": "", "thoughtSignature": sign_text("".join(self._text))}]
        parts = []
        for i, (name, raw) in enumerate(call for _, call in sorted(self._calls.items())):
            args = json.loads(raw or "{}")
            part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
            if i == 0:
                part["thoughtSignature"] = sign_call(name, args)
            parts.append(part)
        self._calls = {}
        return parts

    def fail(self, error: Exception) -> list[bytes]:
        code = getattr(error, "code", None)  # a scripted error's own code names its status
        status = code if isinstance(code, int) and code >= 400 else status_of(error)
        return [sse_event(gemini_error_body(status, error_object(error)["message"]))]

    def end(self) -> list[bytes]:
        return []


class _GeminiStream:
    """``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``."""

    path = ":streamGenerateContent"
    streams = True

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        model = path.split("?", 1)[0].rpartition("/models/")[2].partition(":")[0]
        return self.streams, model or "mock-model"

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        return decode_request(body)

    def problem(self, body: dict[str, Any]) -> str | None:
        return request_problem(body)

    def writer(self, model: str, number: int) -> _GeminiWriter:
        return _GeminiWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        writer = _GeminiWriter(model, number)
        parts = writer._parts(response.reasoning, response.content)
        for i, call in enumerate(response.tool_calls):
            writer._calls[i] = [call.name, call.arguments]
        parts += writer._ending()
        final = ChatChunk(finish_reason=response.finish_reason or "stop", usage=response.usage)
        return writer._event(parts, final)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return gemini_error_body(status, message)

    def assemble(self, data: bytes) -> ModelResponse:
        decoder, parser, chunks = SSEDecoder(), GeminiStreamParser(), []
        for event in decoder.feed(data) + decoder.close():
            chunk = parser.parse(event.data, event.event)
            if chunk is not None:
                chunks.append(chunk)
        return assemble(chunks)


class _GeminiWhole(_GeminiStream):
    """``POST /v1beta/models/{model}:generateContent``."""

    path = ":generateContent"
    streams = False


GEMINI_STREAM = _GeminiStream()
"""Gemini's streamed answers (base URL ``server.origin``)."""
GEMINI_WHOLE = _GeminiWhole()
"""Gemini's whole answers."""
