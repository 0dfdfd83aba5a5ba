"""What a chat-completions delta or message carries: its text and reasoning under every name
providers use, and its tool calls (the rules are in :mod:`rxreact.model.openai.wire`).

Each raises ``TypeError`` for a field of the wrong type; the parser maps that to
:class:`~rxreact.errors.StreamProtocolError`.
"""

from __future__ import annotations

import json
from typing import Any

from rxreact.model.chunks import ToolCallDelta

__all__ = ["optional_str", "text_and_reasoning", "tool_call_deltas"]


def text_and_reasoning(delta: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(text, reasoning)`` of a delta or message, from every field that carries them."""
    content = delta.get("content")
    if content is None or type(content) is str:
        text, thinking = content, None
    else:
        text, thinking = _content_parts(content)
    reasoning_content = delta.get("reasoning_content")
    reasoning = delta.get("reasoning")
    details = delta.get("reasoning_details")
    if reasoning_content is None and reasoning is None and not details:
        return text, thinking  # the common case: a plain text or tool-call delta
    found = [] if thinking is None else [thinking]
    for key, value in (("reasoning_content", reasoning_content), ("reasoning", reasoning)):
        if value is not None:
            if type(value) is not str:
                raise TypeError(f"{key} of type {type(value).__name__}")
            found.append(value)
    if details:
        texts = [d["text"] for d in details if type(d.get("text")) is str]
        if texts:
            found.append("".join(texts))
    if len(found) <= 1:
        return text, found[0] if found else None
    # Gateways send one text under several names: equal texts count once.
    distinct: list[str] = []
    for piece in found:
        if piece and piece not in distinct:
            distinct.append(piece)
    return text, "".join(distinct)


def _content_parts(content: Any) -> tuple[str | None, str | None]:
    """``(text, thinking)`` of a content list (Mistral's typed parts)."""
    if type(content) is not list:
        raise TypeError(f"content of type {type(content).__name__}")
    texts: list[str] = []
    thoughts: list[str] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            texts.append(part.get("text") or "")
        elif kind == "thinking":
            thinking = part.get("thinking")
            if type(thinking) is str:
                thoughts.append(thinking)
            elif thinking:
                thoughts.extend(p.get("text") or "" for p in thinking if p.get("type") == "text")
        # Other parts (images, references, audio) carry no text for us.
    return (
        "".join(texts) if texts else None,
        "".join(thoughts) if thoughts else None,
    )


def tool_call_deltas(raw_calls: list[Any]) -> tuple[ToolCallDelta, ...]:
    """One :class:`ToolCallDelta` per ``tool_calls`` item, values as sent."""
    deltas = []
    for call in raw_calls:
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if arguments is not None and type(arguments) is not str:
            # Some servers send the arguments object itself; the contract is a JSON string.
            arguments = json.dumps(arguments, ensure_ascii=False)
        index, call_id, name = call.get("index"), call.get("id"), function.get("name")
        if not (
            (index is None or type(index) is int) and optional_str(call_id) and optional_str(name)
        ):
            raise TypeError("tool call index, id or name of the wrong type")
        deltas.append(ToolCallDelta(index, call_id, name, arguments))
    return tuple(deltas)


def optional_str(value: object) -> bool:
    """``None`` or a ``str`` (not a subclass: what JSON decodes to)."""
    return value is None or type(value) is str
