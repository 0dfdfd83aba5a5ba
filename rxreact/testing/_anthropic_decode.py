"""A Messages request body read back as a :class:`~rxreact.messages.ChatRequest`, for the mock
server's script functions."""

from __future__ import annotations

import json
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    Message,
    ReplayItem,
    SystemMessage,
    Text,
    ToolCall,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.anthropic.wire import PROVIDER

__all__ = ["decode_request"]

_CHOICES: dict[str, ToolChoice] = {
    "auto": "auto",
    "any": "required",
    "tool": "required",
    "none": "none",
}
_REQUEST_KEYS = frozenset({"model", "messages", "system", "tools", "tool_choice", "stream"})


def decode_request(body: dict[str, Any]) -> ChatRequest:
    """A Messages request body as a :class:`ChatRequest` (for script functions): tool results
    become tool messages, thinking blocks reasoning and replay items; keys other than model,
    messages, system, tools, tool_choice and stream go to ``options``."""
    system = body.get("system")
    messages: list[Message] = []
    if isinstance(system, str):
        messages.append(SystemMessage(content=system))
    elif system:
        messages += [SystemMessage(content=b["text"]) for b in system]
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            messages.append(_assistant(blocks))
            continue
        parts: list[Text | Image | File] = []
        for block in blocks:
            if block["type"] == "tool_result":
                messages.append(
                    ToolMessage(
                        tool_call_id=block["tool_use_id"],
                        content=_result_content(block.get("content", "")),
                        is_error=bool(block.get("is_error")),
                    )
                )
            else:
                parts.append(_part(block))
        if parts:
            text_only = all(isinstance(p, Text) for p in parts) and len(parts) == 1
            messages.append(UserMessage(content=parts[0].text if text_only else tuple(parts)))  # type: ignore[union-attr]
    tools = tuple(
        ToolSpec(
            name=t["name"], description=t.get("description") or "", parameters=t["input_schema"]
        )
        for t in body.get("tools") or ()
    )
    choice = body.get("tool_choice")
    return ChatRequest(
        messages=tuple(messages),
        tools=tools,
        tool_choice=_CHOICES.get(choice["type"]) if isinstance(choice, dict) else None,
        options={k: v for k, v in body.items() if k not in _REQUEST_KEYS},
    )


def _assistant(blocks: list[dict[str, Any]]) -> AssistantMessage:
    texts, thoughts, calls, replay = [], [], [], []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            texts.append(block["text"])
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
        elif kind in ("thinking", "redacted_thinking"):
            replay.append(ReplayItem(provider=PROVIDER, data=block))
            if block.get("thinking"):
                thoughts.append(block["thinking"])
    return AssistantMessage(
        content="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning="\n\n".join(thoughts) or None,
        replay=tuple(replay),
    )


def _result_content(content: Any) -> str | tuple[Text | Image | File, ...]:
    if isinstance(content, str):
        return content
    return tuple(_part(block) for block in content)


def _part(block: dict[str, Any]) -> Text | Image | File:
    kind = block["type"]
    if kind == "text":
        return Text(text=block["text"])
    source = block["source"]
    if kind == "image":
        if source["type"] == "url":
            return Image(url=source["url"])
        return Image(data_base64=source["data"], media_type=source["media_type"])
    name = block.get("title")
    if source["type"] == "url":
        return File(url=source["url"], name=name)
    if source["type"] == "text":
        return File.from_bytes(source["data"].encode(), "text/plain", name)
    return File(data_base64=source["data"], media_type=source["media_type"], name=name)
