"""A whole (non-streaming) Anthropic message as a :class:`~rxreact.model.chunks.ModelResponse`,
read with the stream's rules (:mod:`rxreact.model.anthropic.wire`)."""

from __future__ import annotations

import json
from typing import Any

from rxreact.model.anthropic._fields import load_object, protocol_error, stream_error
from rxreact.model.anthropic.wire import MessagesStreamParser
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ModelResponse

__all__ = ["PausedResponse", "parse_message"]


class PausedResponse(ModelResponse):
    """A whole message that stopped with ``pause_turn``, with its raw content to send back."""

    content_blocks: tuple[dict[str, Any], ...] = ()


def parse_message(body: bytes | str | dict[str, Any]) -> ModelResponse:
    """A whole (non-streaming) message, read with the stream's rules so that the result equals
    what the stream of the same message assembles to.

    Returns:
        The response; a :class:`PausedResponse` when it stopped with ``pause_turn``.

    Raises:
        ProviderStreamError: the body is an ``{"type": "error"}`` object.
        StreamProtocolError: the body is not a message.
    """
    obj = body if isinstance(body, dict) else load_object(body)
    if obj.get("type") == "error":
        raise stream_error(obj.get("error") or obj)
    parser = MessagesStreamParser()
    assembler = ResponseAssembler()
    try:
        blocks = obj["content"]
        # The stream's events for the same message, fed to the same parser.
        events: list[dict[str, Any]] = [{"type": "message_start", "message": obj}]
        for index, block in enumerate(blocks):
            start = dict(block)
            pieces: list[dict[str, Any]] = []
            if block["type"] == "tool_use":
                start["input"] = {}
                pieces = [{"type": "input_json_delta", "partial_json": _arguments(block)}]
            events.append({"type": "content_block_start", "index": index, "content_block": start})
            events += [{"type": "content_block_delta", "index": index, "delta": p} for p in pieces]
            events.append({"type": "content_block_stop", "index": index})
        stop = {"stop_reason": obj.get("stop_reason")}
        events.append({"type": "message_delta", "delta": stop, "usage": obj.get("usage") or {}})
    except (AttributeError, TypeError, KeyError) as exc:
        raise protocol_error("not a message", body) from exc
    for event in events:
        chunk = parser.parse(json.dumps(event), None)
        if chunk is not None:
            assembler.add(chunk)
    response = assembler.response()
    if parser.paused:
        blocks = parser.continuation().content
        return PausedResponse(**dict(response), content_blocks=tuple(blocks))
    return response


def _arguments(block: dict[str, Any]) -> str:
    value = block.get("input")
    return "" if not value else json.dumps(value, ensure_ascii=False)
