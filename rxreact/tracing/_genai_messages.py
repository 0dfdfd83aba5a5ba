"""Messages as the OpenTelemetry GenAI conventions record them (``gen_ai.input.messages``,
``gen_ai.output.messages``): role and parts, as JSON, for :mod:`rxreact.tracing`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rxreact.messages import ChatRequest, ContentPart, File, Image, ToolCall
from rxreact.messages._labels import content_label, part_label

__all__ = ["input_json", "output_json"]


def input_json(request: ChatRequest) -> str:
    """The request's messages in the GenAI conventions' shape (role + parts)."""
    messages = []
    for message in request.messages:
        parts: list[dict[str, Any]] = []
        content = getattr(message, "content", None)
        if isinstance(content, tuple):
            parts.extend(_content_part(part) for part in content)
        elif content:
            parts.append({"type": "text", "content": content})
        for call in getattr(message, "tool_calls", None) or ():
            parts.append(_call_part(call))
        call_id = getattr(message, "tool_call_id", None)
        if call_id is not None:
            response = content_label(content) if isinstance(content, tuple) else content
            parts = [{"type": "tool_call_response", "id": call_id, "response": response}]
        messages.append({"role": message.role, "parts": parts})
    return json.dumps(messages, ensure_ascii=False)


def _content_part(part: ContentPart) -> dict[str, Any]:
    """A part of a message made of parts: an image or file at a URL as a ``uri`` part; bytes
    are never copied into a span, a label says what they were."""
    if isinstance(part, Image | File) and part.url is not None and not part.url.startswith("data:"):
        modality = "image" if isinstance(part, Image) else "document"
        return {"type": "uri", "modality": modality, "uri": part.url}
    return {"type": "text", "content": part_label(part)}


def output_json(text: str, calls: Sequence[ToolCall]) -> str:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts.extend(_call_part(c) for c in calls)
    return json.dumps([{"role": "assistant", "parts": parts}], ensure_ascii=False)


def _call_part(call: ToolCall) -> dict[str, Any]:
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
