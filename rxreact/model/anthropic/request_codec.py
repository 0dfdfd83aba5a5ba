"""A :class:`~rxreact.messages.ChatRequest` as the body of Anthropic's ``POST /v1/messages``.

How our messages map onto Anthropic's:

- system messages → the top-level ``system`` (text blocks, in order): the API has no system
  role in ``messages``.
- the rest → ``messages`` whose roles alternate from ``user``: tool results become
  ``tool_result`` blocks (``is_error`` when the tool failed), and consecutive user-side
  messages (the results of one round, a user message after them) are ONE user message, the
  tool results first, as the API requires. An assistant message is its replay items
  (``provider="anthropic"`` only: thinking blocks with their signature, redacted thinking, sent
  back unchanged and first, as the API requires), its text, then its ``tool_use`` blocks.
- tools → ``tools`` with ``input_schema``; ``tool_choice`` ``auto``/``required``/``none`` →
  ``{"type": "auto"|"any"|"none"}`` (also when the options say it that way), sent only with
  tools (the forced last round keeps the tools declared and sends ``none``).
- ``response_format`` in the options → ``output_config.format`` (Anthropic's structured
  outputs) for a ``json_schema``, every object schema closed with
  ``additionalProperties: false`` as the API requires. A ``json_object`` (the judge's) has
  no Anthropic equivalent (structured outputs need a closed schema): it becomes an
  instruction appended to the system prompt, and the reply is parsed as usual.
- ``cache=True``: ``cache_control`` breakpoints on the system prompt, the last tool and the
  last block of the last message (three of the API's four).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    Message,
    SystemMessage,
    Text,
    ToolMessage,
)
from rxreact.model._request_parts import arguments_object, closed_schema, inline_data
from rxreact.model.anthropic.wire import PROVIDER

__all__ = ["JSON_INSTRUCTION", "encode_request"]

JSON_INSTRUCTION = "Reply with one JSON object and nothing else: no prose, no code fences."
"""Appended to the system prompt for ``response_format: {"type": "json_object"}``."""

_CACHE = {"type": "ephemeral"}
_TOOL_CHOICES = {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image the API takes inline (5 MB)."""


def encode_request(
    request: ChatRequest,
    *,
    model: str,
    stream: bool,
    max_tokens: int,
    thinking: Mapping[str, Any] | None = None,
    cache: bool = False,
    default_options: Mapping[str, Any] | None = None,
    assistant_prefix: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``POST /v1/messages`` for ``request``.

    Args:
        request: the messages, tools and options to send.
        model: the ``model`` field.
        stream: ask for an SSE stream.
        max_tokens: the ``max_tokens`` field (the API requires one).
        thinking: the ``thinking`` field, as given (``{"type": "enabled", "budget_tokens":
            N}``, ``{"type": "adaptive"}``).
        cache: mark the system prompt, the tools and the last message for prompt caching.
        default_options: body keys sent unless ``request.options`` sets them.
        assistant_prefix: the assistant content of a turn the server paused
            (``pause_turn``), sent as the last message so that the model continues it.

    Raises:
        InvalidArgumentError: a part the API cannot take (an image type, a file type, a
            too-large image).
    """
    options = {**(default_options or {}), **request.options}
    response_format = options.pop("response_format", None)
    system: list[dict[str, Any]] = [
        {"type": "text", "text": m.content}
        for m in request.messages
        if isinstance(m, SystemMessage)
    ]
    messages = _messages([m for m in request.messages if not isinstance(m, SystemMessage)])
    if assistant_prefix:
        messages.append({"role": "assistant", "content": list(assistant_prefix)})
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema") or {}
            closed = closed_schema(schema)
            body["output_config"] = {"format": {"type": "json_schema", "schema": closed}}
        elif kind == "json_object":
            system.append({"type": "text", "text": JSON_INSTRUCTION})
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
    if thinking is not None:
        body["thinking"] = dict(thinking)
    body["stream"] = stream
    body.update(options)
    if "thinking" in body and _unthought_tool_turn(request.messages):
        # The last assistant turn calls tools with no thinking block (another model made it:
        # a fallback chain): the API refuses thinking then (400), so this request goes without.
        del body["thinking"]
    # The request's own choice wins (the forced round's "none"); one in the options may use
    # the OpenAI names too. Without tools the API rejects any.
    choice = request.tool_choice or body.get("tool_choice")
    if not request.tools:
        body.pop("tool_choice", None)
    elif isinstance(choice, str) and choice in _TOOL_CHOICES:
        body["tool_choice"] = dict(_TOOL_CHOICES[choice])
    if cache:
        _mark_cache(body)
    return body


def _unthought_tool_turn(messages: Sequence[Message]) -> bool:
    """Whether the last assistant message has tool calls but no thinking block of ours."""
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None or not last.tool_calls:
        return False
    return not any(
        item.provider == PROVIDER and item.data.get("type") in ("thinking", "redacted_thinking")
        for item in last.replay
    )


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            content = _assistant(message)
            role = "assistant"
        elif isinstance(message, ToolMessage):
            content = [_tool_result(message)]
            role = "user"
        else:
            content = _content(message.content)
            role = "user"
        if not content:
            continue  # an empty assistant message: the API refuses empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"] += content  # one message per turn: roles alternate
        else:
            out.append({"role": role, "content": content})
    return out


def _assistant(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks = [dict(item.data) for item in message.replay if item.provider == PROVIDER]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    for call in message.tool_calls:
        arguments = arguments_object(call.arguments)
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return blocks


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    content = message.content
    block["content"] = content if isinstance(content, str) else _content(content)
    if message.is_error:
        block["is_error"] = True
    return block


def _content(content: str | tuple[Text | Image | File, ...]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [_part(part) for part in content]


def _part(part: Text | Image | File) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "image", "source": _image_source(part)}
    return _document(part)


def _image_source(image: Image) -> dict[str, Any]:
    if image.url is not None and not image.url.startswith("data:"):
        return {"type": "url", "url": image.url}
    media_type, data = inline_data(image, "Anthropic")
    if media_type not in _IMAGE_TYPES:
        raise InvalidArgumentError(
            f"Anthropic takes images as {', '.join(sorted(_IMAGE_TYPES))}, not {media_type}"
        )
    if len(data) * 3 // 4 > MAX_IMAGE_BYTES:
        raise InvalidArgumentError(f"Anthropic takes images up to {MAX_IMAGE_BYTES:,} bytes")
    return {"type": "base64", "media_type": media_type, "data": data}


def _document(file: File) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "document"}
    if file.url is not None and not file.url.startswith("data:"):
        block["source"] = {"type": "url", "url": file.url}  # a PDF the API fetches
    else:
        media_type, data = inline_data(file, "Anthropic")
        if media_type == "application/pdf":
            block["source"] = {"type": "base64", "media_type": media_type, "data": data}
        elif media_type.startswith("text/"):
            text = base64.b64decode(data).decode("utf-8", "replace")
            block["source"] = {"type": "text", "media_type": "text/plain", "data": text}
        else:
            raise InvalidArgumentError(
                f"Anthropic takes documents as application/pdf or text/*, not {media_type}"
                + (f" ({file.name})" if file.name else "")
            )
    if file.name:
        block["title"] = file.name
    return block


def _mark_cache(body: dict[str, Any]) -> None:
    if body.get("system"):
        body["system"][-1]["cache_control"] = dict(_CACHE)
    if body.get("tools"):
        body["tools"][-1]["cache_control"] = dict(_CACHE)
    messages = body["messages"]
    if messages:
        last = messages[-1]["content"][-1]
        if last.get("type") not in ("thinking", "redacted_thinking"):  # not cacheable
            last["cache_control"] = dict(_CACHE)
