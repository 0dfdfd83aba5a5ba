"""Bedrock's Converse answers as chunks: the stream's events and a whole response.

A streamed answer is AWS's binary event stream (:mod:`rxreact.model.http.eventstream`), whose
messages arrive here as ``(event type, JSON payload)``::

    messageStart                       (the role)
      contentBlockStart(i)?            (a toolUse block: its id and name)
      contentBlockDelta(i)*            (text, toolUse.input pieces, reasoningContent)
      contentBlockStop(i)
    messageStop                        (stopReason)
    metadata                           (usage and metrics: the terminal event)

with an exception event anywhere (the end): ``throttlingException``,
``serviceUnavailableException`` and ``internalServerException`` are retried before the first
chunk (like the 429 / 503 / 500 they stand for); ``modelStreamErrorException`` and
``validationException`` are :class:`~rxreact.errors.ProviderStreamError` s.

The mapping: text deltas → text; ``toolUse`` blocks → tool-call deltas indexed by the order of
the tool blocks (the start carries id and name, each ``input`` piece the arguments);
``reasoningContent`` → the reasoning channel, and at the block's end the whole block (text and
``signature``, or ``redactedContent``) as a :class:`~rxreact.messages.ReplayItem`
(``provider="bedrock"``) sent back unchanged on the next request; ``stopReason`` → ours
(:data:`FINISH_REASONS`), the raw value kept as ``provider_finish_reason``. A stream that ends
after ``messageStop`` but before ``metadata`` loses only the usage: it is accepted; one that
ends before ``messageStop`` is cut.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from rxreact.errors import ProviderStreamError, StreamInterruptedError
from rxreact.messages import ReplayItem, ToolCall, Usage
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.eventstream import EventStreamDecoder
from rxreact.model.http.wire_errors import protocol_error

__all__ = ["FINISH_REASONS", "PROVIDER", "ConverseStreamParser", "parse_response", "usage_of"]

PROVIDER = "bedrock"
"""The tag of the replay items this wire format makes and takes back."""
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
"""Bedrock's stop reasons → ours; an unknown one (``malformed_tool_use``...) ends as ``stop``."""
RETRYABLE_EXCEPTIONS = frozenset(
    {"throttlingException", "serviceUnavailableException", "internalServerException"}
)
"""Exception events that stand for a 429 / 503 / 500: retried before the first chunk."""


def usage_of(raw: Any) -> Usage:
    """Converse's ``TokenUsage`` as a :class:`~rxreact.messages.Usage`: ``prompt_tokens`` counts
    every input token (the cached ones too, as OpenAI's does), the cache counts kept as extras.

    Raises:
        ValueError: a count is not an integer, or the usage is not an object.
    """
    if type(raw) is not dict:
        raise ValueError("usage is not an object")
    counts: dict[str, int] = {}
    for key in ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"):
        value = raw.get(key)
        if value is not None:
            if type(value) is not int:
                raise ValueError(f"usage {key} is not an integer")
            counts[key] = value
    extras = {}
    if "cacheReadInputTokens" in counts:
        extras["cache_read_input_tokens"] = counts["cacheReadInputTokens"]
    if "cacheWriteInputTokens" in counts:
        extras["cache_creation_input_tokens"] = counts["cacheWriteInputTokens"]
    prompt = counts.get("inputTokens", 0) + sum(extras.values())
    completion = counts.get("outputTokens")
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + (completion or 0),
        **extras,
    )


def _chunk(**fields: Any) -> ChatChunk:
    return ChatChunk(**fields)


def _text_chunk(text: str) -> ChatChunk:
    # The per-token path: tuple.__new__ skips the NamedTuple's keyword handling.
    return tuple.__new__(ChatChunk, (text, None, (), None, None, None, (), None))


class _Block:
    __slots__ = ("data", "kind", "ordinal", "pieces", "signature")

    def __init__(self, kind: str, ordinal: int = -1) -> None:
        self.kind = kind
        self.ordinal = ordinal
        self.pieces: list[str] = []
        self.signature: str | None = None
        self.data: str | None = None  # redactedContent, base64 as sent


class ConverseStreamParser(StreamParser):
    """The events of one ``converse-stream`` answer → chunks (one parser per attempt)."""

    __slots__ = ("_blocks", "_stopped", "_tools")

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._tools = 0
        self._stopped = False

    def new_decoder(self, max_frame: int | None) -> EventStreamDecoder:
        return EventStreamDecoder(max_frame)

    def parse(self, data: str, event: str | None) -> ChatChunk | None:
        kind = event or ""
        if kind.startswith(("exception:", "error:")):
            raise _exception(kind.partition(":")[2], data)
        try:
            obj = from_json(data) if data else {}
            if kind == "contentBlockDelta":
                delta = obj["delta"]
                text = delta.get("text")
                if type(text) is str:  # the per-token path first
                    return _text_chunk(text) if text else None
                return self._delta(obj["contentBlockIndex"], delta)
            if kind == "contentBlockStart":
                return self._start(obj["contentBlockIndex"], obj.get("start") or {})
            if kind == "contentBlockStop":
                return self._stop(obj["contentBlockIndex"])
            if kind == "messageStop":
                stop = obj["stopReason"]
                if type(stop) is not str:
                    raise TypeError("stopReason is not a string")
                self._stopped = True
                return _chunk(
                    finish_reason=FINISH_REASONS.get(stop, "stop"), provider_finish_reason=stop
                )
            if kind == "metadata":
                self.done = True
                usage = obj.get("usage")
                return None if usage is None else _chunk(usage=usage_of(usage))
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise protocol_error("unexpected event shape", data) from exc
        return None  # messageStart, and event types added later

    def end(self, saw_finish_reason: bool) -> None:
        if not self._stopped:
            raise StreamInterruptedError("the Converse stream ended before messageStop")

    def _block(self, index: int, kind: str) -> _Block:
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(kind)
        return block

    def _start(self, index: int, start: dict[str, Any]) -> ChatChunk | None:
        tool = start.get("toolUse")
        if tool is None:
            return None
        call_id, name = tool["toolUseId"], tool["name"]
        if type(call_id) is not str or type(name) is not str:
            raise TypeError("toolUse id or name is not a string")
        block = self._blocks[index] = _Block("toolUse", self._tools)
        self._tools += 1
        return _chunk(tool_calls=(ToolCallDelta(block.ordinal, call_id, name, None),))

    def _delta(self, index: int, delta: dict[str, Any]) -> ChatChunk | None:
        text = delta.get("text")
        if text is not None:
            if type(text) is not str:
                raise TypeError("text is not a string")
            return _chunk(text=text) if text else None
        tool = delta.get("toolUse")
        if tool is not None:
            block = self._blocks.get(index)
            if block is None or block.kind != "toolUse":
                raise ValueError("a toolUse delta for a block that did not start as one")
            piece = tool["input"]
            if type(piece) is not str:
                raise TypeError("toolUse input is not a string")
            block.pieces.append(piece)
            return (
                _chunk(tool_calls=(ToolCallDelta(block.ordinal, None, None, piece),))
                if piece
                else None
            )
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            block = self._block(index, "reasoning")
            if reasoning.get("signature") is not None:
                block.signature = (block.signature or "") + reasoning["signature"]
            if reasoning.get("redactedContent") is not None:
                block.data = reasoning["redactedContent"]
            thought = reasoning.get("text")
            if thought:
                block.pieces.append(thought)
                return _chunk(reasoning=thought)
        return None  # citations, images: nothing for us to show

    def _stop(self, index: int) -> ChatChunk | None:
        block = self._blocks.get(index)
        if block is None or block.kind != "reasoning":
            return None
        return _chunk(replay=(ReplayItem(provider=PROVIDER, data=_reasoning_item(block)),))


def _reasoning_item(block: _Block) -> dict[str, Any]:
    if block.data is not None:
        return {"reasoningContent": {"redactedContent": block.data}}
    text: dict[str, Any] = {"text": "".join(block.pieces)}
    if block.signature is not None:
        text["signature"] = block.signature
    return {"reasoningContent": {"reasoningText": text}}


def _exception(kind: str, data: str) -> ProviderStreamError:
    try:
        payload = json.loads(data) if data.lstrip().startswith("{") else {"message": data}
    except ValueError:
        payload = {"message": data}
    message = payload.get("message") if isinstance(payload, dict) else None
    error = ProviderStreamError(
        message if isinstance(message, str) and message else kind or "unknown error",
        code=kind or None,
        error_type=kind or None,
        payload=payload if isinstance(payload, dict) else {"message": data},
    )
    if kind in RETRYABLE_EXCEPTIONS:
        error.retryable = True
    return error


def parse_response(body: bytes) -> ModelResponse:
    """A whole ``converse`` answer (``output.message``, ``stopReason``, ``usage``)."""
    try:
        obj = json.loads(body)
        message = obj["output"]["message"]
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[ToolCall] = []
        replay: list[ReplayItem] = []
        for block in message["content"]:
            if "text" in block:
                text.append(block["text"])
            elif "toolUse" in block:
                use = block["toolUse"]
                arguments = json.dumps(use.get("input") or {}, ensure_ascii=False)
                calls.append(ToolCall(id=use["toolUseId"], name=use["name"], arguments=arguments))
            elif "reasoningContent" in block:
                content = block["reasoningContent"]
                thought = (content.get("reasoningText") or {}).get("text")
                if thought:
                    reasoning.append(thought)
                replay.append(ReplayItem(provider=PROVIDER, data={"reasoningContent": content}))
        stop = obj["stopReason"]
        usage = usage_of(obj["usage"]) if obj.get("usage") is not None else None
    except (AttributeError, TypeError, ValueError, KeyError) as exc:
        raise protocol_error("unexpected response shape", body) from exc
    return ModelResponse(
        content="".join(text) or None,
        reasoning="\n\n".join(reasoning) or None,
        tool_calls=tuple(calls),
        finish_reason=FINISH_REASONS.get(stop, "stop"),
        usage=usage,
        replay=tuple(replay),
        provider_finish_reason=stop,
    )
