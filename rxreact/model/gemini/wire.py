"""Gemini's ``GenerateContentResponse`` s as chunks: each SSE event of a stream is a whole one.

``streamGenerateContent?alt=sse`` sends ``data: {GenerateContentResponse}`` events with no
``[DONE]``: the response is complete once candidate 0 has a ``finishReason`` (a body that
ends before one was cut). The mapping:

- parts of ``candidates[0].content``: ``text`` → text deltas, ``"thought": true`` text (the
  thought summaries of ``thinkingConfig.includeThoughts``) → reasoning, ``functionCall`` →
  one whole tool-call delta (``args`` serialized; the ``id`` when Gemini gave one, else the
  assembler makes a stable one from the call's position);
- ``thoughtSignature`` s: each function call's (with its position, name and Gemini's id) and
  a text part's, as :class:`~rxreact.messages.ReplayItem` s tagged ``"gemini"``, sent back
  unchanged by :mod:`~rxreact.model.gemini.request_codec`; every call gets one, signed or
  not, so that Gemini's own ids go back and ours do not;
- ``finishReason`` (:data:`FINISH_REASONS`): ``STOP`` is ``tool_calls`` when the response
  called, ``MAX_TOKENS`` is ``length``; the blocked ones (:data:`BLOCKED`) and a prompt blocked
  in ``promptFeedback`` are a :class:`~rxreact.errors.ContentBlockedError` (not retried), a
  malformed or unexpected call a :class:`~rxreact.errors.ProviderStreamError`; the raw value
  is kept as ``provider_finish_reason``;
- ``usageMetadata`` (sent, growing, on every event) → :class:`~rxreact.messages.Usage` once,
  with the finish reason: ``promptTokenCount``, ``candidatesTokenCount`` plus
  ``thoughtsTokenCount`` as completion tokens (the thoughts also as
  ``completion_tokens_details.reasoning_tokens``), ``cachedContentTokenCount`` as
  ``prompt_tokens_details.cached_tokens``;
- an ``{"error": ...}`` event (Google's ``code``, ``message``, ``status``) → a
  :class:`~rxreact.errors.ProviderStreamError`, retried before the first chunk when its
  status says the service was overloaded (``UNAVAILABLE``, ``RESOURCE_EXHAUSTED``, ``INTERNAL``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from rxreact.errors import ContentBlockedError, ProviderStreamError, StreamInterruptedError
from rxreact.messages import ReplayItem, Usage
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.gemini.request_codec import PROVIDER
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.wire_errors import protocol_error, provider_error

__all__ = ["BLOCKED", "FINISH_REASONS", "GeminiStreamParser", "parse_response", "usage_of"]

FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "LANGUAGE": "stop",
    "OTHER": "stop",
    "FINISH_REASON_UNSPECIFIED": "stop",
}
"""Gemini's finish reasons → ours (an unknown one ends the answer as ``stop``)."""
BLOCKED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
"""The finish reasons of an answer Gemini blocked: :class:`ContentBlockedError`."""
_BAD_CALLS = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})
_RETRYABLE = frozenset({"UNAVAILABLE", "RESOURCE_EXHAUSTED", "INTERNAL"})


class GeminiStreamParser(StreamParser):
    """The events of one streamed response → chunks (one parser per attempt)."""

    __slots__ = ("_calls", "_finished", "_usage")

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0  # function calls so far: the next one's position
        self._finished = False
        self._usage: dict[str, Any] | None = None

    def parse(self, data: str, event: str | None) -> ChatChunk | None:
        try:
            obj = from_json(data)
        except ValueError:
            try:
                obj = json.loads(data)  # lone surrogate escapes: kept, paired by the reader
            except ValueError as exc:
                raise protocol_error("invalid JSON", data) from exc
        if type(obj) is list and len(obj) == 1:
            obj = obj[0]  # errors sometimes come as a one-element array
        if type(obj) is not dict:
            raise protocol_error("expected a JSON object", data)
        try:
            return self._response(obj)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            raise protocol_error("unexpected response shape", data) from exc

    def _response(self, obj: dict[str, Any]) -> ChatChunk | None:
        error = obj.get("error")
        if error:
            raise _error(error)
        feedback = obj.get("promptFeedback")
        if feedback and feedback.get("blockReason"):
            raise ContentBlockedError(
                str(feedback["blockReason"]),
                "prompt",
                str(feedback.get("blockReasonMessage") or ""),
                payload=feedback,
            )
        usage = obj.get("usageMetadata")
        if usage is not None:
            self._usage = usage
        candidates = obj.get("candidates")
        candidate = candidates[0] if candidates else None
        if candidate is None:
            return self._usage_after_finish()
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCallDelta] = []
        replay: list[ReplayItem] = []
        for part in (candidate.get("content") or {}).get("parts") or ():
            signature = part.get("thoughtSignature")
            call = part.get("functionCall")
            if call is not None:
                position, name, call_id = self._calls, call["name"], call.get("id") or None
                self._calls += 1
                arguments = json.dumps(call.get("args") or {}, ensure_ascii=False)
                calls.append(ToolCallDelta(position, call_id, name, arguments))
                data = {"type": "function_call", "position": position, "name": name}
                data["id"] = call_id
                if signature is not None:
                    data["thoughtSignature"] = signature
                replay.append(ReplayItem(provider=PROVIDER, data=data))
                continue
            text = part.get("text")
            if text is not None and type(text) is not str:
                raise TypeError("text is not a string")
            if part.get("thought"):
                if text:
                    thoughts.append(text)
            elif text:
                texts.append(text)
            if signature is not None:
                replay.append(
                    ReplayItem(
                        provider=PROVIDER, data={"type": "text", "thoughtSignature": signature}
                    )
                )
        raw_reason = candidate.get("finishReason")
        finish = None
        parsed_usage = None
        if raw_reason:
            finish = self._finish(raw_reason, candidate)
            self._finished = True
            parsed_usage = None if self._usage is None else usage_of(self._usage)
        elif self._finished and usage is not None:
            parsed_usage = usage_of(usage)
        if not (texts or thoughts or calls or replay or finish or parsed_usage):
            return None
        return ChatChunk(
            text="".join(texts) if texts else None,
            reasoning="".join(thoughts) if thoughts else None,
            tool_calls=tuple(calls),
            finish_reason=finish,
            usage=parsed_usage,
            replay=tuple(replay),
            provider_finish_reason=raw_reason if finish is not None else None,
        )

    def _finish(self, reason: str, candidate: dict[str, Any]) -> str:
        if reason in BLOCKED:
            message = str(candidate.get("finishMessage") or "")
            ratings = candidate.get("safetyRatings")
            raise ContentBlockedError(reason, "answer", message, payload={"safetyRatings": ratings})
        if reason in _BAD_CALLS:
            message = candidate.get("finishMessage") or f"the model ended with {reason}"
            raise ProviderStreamError(str(message), code=reason, payload=candidate)
        if reason == "STOP" and self._calls:
            return "tool_calls"
        return FINISH_REASONS.get(reason, "stop")

    def _usage_after_finish(self) -> ChatChunk | None:
        if self._finished and self._usage is not None:
            return ChatChunk(usage=usage_of(self._usage))
        return None

    def end(self, saw_finish_reason: bool) -> None:
        if not saw_finish_reason:
            raise StreamInterruptedError("the stream ended before a finishReason")


def _error(error: Any) -> ProviderStreamError:
    exc = provider_error(error)
    status = error.get("status") if isinstance(error, dict) else None
    if isinstance(status, str):
        exc.error_type = status
        exc.retryable = status in _RETRYABLE
    return exc


def usage_of(meta: dict[str, Any]) -> Usage:
    """Gemini's ``usageMetadata`` as :class:`Usage` (rules: the module doc)."""
    prompt = meta.get("promptTokenCount")
    candidates = meta.get("candidatesTokenCount")
    thoughts = meta.get("thoughtsTokenCount")
    cached = meta.get("cachedContentTokenCount")
    extras: dict[str, Any] = {}
    if thoughts is not None:
        extras["completion_tokens_details"] = {"reasoning_tokens": thoughts}
    if cached is not None:
        extras["prompt_tokens_details"] = {"cached_tokens": cached}
    completion = None
    if candidates is not None or thoughts is not None:
        completion = (candidates or 0) + (thoughts or 0)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=meta.get("totalTokenCount"),
        **extras,
    )


def parse_response(body: bytes | str) -> ModelResponse:
    """A whole ``generateContent`` response (read as the stream's one event would be)."""
    parser = GeminiStreamParser()
    assembler = ResponseAssembler()
    chunk = parser.parse(body.decode() if isinstance(body, bytes) else body, None)
    if chunk is not None:
        assembler.add(chunk)
    if not assembler.saw_finish_reason:
        raise protocol_error("a response without a finishReason", body)
    return assembler.response()
