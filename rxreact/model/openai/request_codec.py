"""A :class:`~rxreact.messages.ChatRequest` to and from the OpenAI ``/chat/completions`` body.

:func:`encode_request` writes what the client sends; :func:`decode_request` reads any body an
OpenAI-compatible client sends (the mock server uses it, so it is tolerant: content given as a
list of parts, the ``developer`` role, a named ``tool_choice``, missing descriptions).
``decode_request(encode_request(r, ...))`` gives ``r`` back (up to a ``tool_choice`` without
tools, which is not sent, an empty assistant text, which reads back as ``None``, and a tool
result's images, which are sent in a user message after the round's tool messages: see
:mod:`rxreact.model.tool_media`). User messages made of parts are encoded by
:mod:`rxreact.model.openai._parts_codec`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    UserMessage,
    content_text,
)
from rxreact.model.openai._call_extras import attach_extras
from rxreact.model.openai._parts_codec import decode_content, encode_content
from rxreact.model.tool_media import tool_media_to_user_messages

__all__ = ["decode_request", "encode_request"]

# Body keys that decode_request maps to ChatRequest fields; all others go to ``options``.
_KNOWN_KEYS = frozenset({"model", "messages", "tools", "tool_choice", "stream", "stream_options"})
_TOOL_ONLY_KEYS = ("tool_choice", "parallel_tool_calls")
_TOOL_CHOICES: dict[str, ToolChoice] = {"auto": "auto", "none": "none", "required": "required"}


def encode_request(
    request: ChatRequest,
    *,
    model: str,
    stream: bool,
    send_reasoning: bool = False,
    include_usage: bool = True,
    default_options: Mapping[str, Any] | None = None,
    replay_tag: str | None = None,
    signature_placeholder: str | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``POST /chat/completions`` for ``request``.

    Args:
        request: the messages, tools and options to send.
        model: the ``model`` field.
        stream: ask for an SSE stream of ``chat.completion.chunk`` s.
        send_reasoning: echo each assistant message's reasoning as ``reasoning_content``
            (DeepSeek-style thinking models ask for it on tool rounds; others reject it).
        include_usage: when streaming, ask for a trailing usage chunk
            (``stream_options.include_usage``).
        default_options: body keys sent unless ``request.options`` sets them (the model's
            own ``options=``).
        replay_tag: this endpoint's replay tag: the tool calls' provider extras kept with
            it (a thought signature) go back on their calls; ``None`` sends none
            (:mod:`rxreact.model.openai._call_extras`).
        signature_placeholder: the thought signature sent where Gemini requires one and the
            history has none (calls from another model); ``None`` sends none.

    Raises:
        InvalidArgumentError: a part the API cannot take (a file given by URL).

    Returns:
        A dict ready for ``json.dumps``. ``tool_choice`` and ``parallel_tool_calls`` are sent
        only together with tools, since the API rejects them alone (options included). Options
        are merged over what the request implies (``default_options``, then
        ``request.options``), except that a ``tool_choice`` the request itself sets wins: the
        agent's forced round says ``"none"`` whatever was asked.
    """
    history = tool_media_to_user_messages(request.messages)
    messages = [_encode_message(m, send_reasoning) for m in history]
    if replay_tag is not None:
        replays = [m.replay if isinstance(m, AssistantMessage) else None for m in history]
        attach_extras(messages, replays, replay_tag, signature_placeholder)
    body: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
    body["stream"] = stream
    if stream and include_usage:
        body["stream_options"] = {"include_usage": True}
    if default_options:
        body.update(default_options)
    if request.options:
        body.update(request.options)
        if request.tool_choice is not None and request.tools:
            body["tool_choice"] = request.tool_choice
    if not request.tools and (default_options or request.options):
        # A model-wide tool_choice must not break the requests that declare no tools (a
        # judge's, a summary's): the API rejects these keys without tools.
        for key in _TOOL_ONLY_KEYS:
            body.pop(key, None)
    return body


def _encode_message(message: Message, send_reasoning: bool) -> dict[str, Any]:
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant"}
        if message.tool_calls:
            out["content"] = message.content
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in message.tool_calls
            ]
        else:
            # Without tool calls the API wants a string, even for an empty answer.
            out["content"] = message.content or ""
        if send_reasoning and message.reasoning is not None:
            out["reasoning_content"] = message.reasoning
        return out
    if isinstance(message, ToolMessage):
        # Parts left here are text only: tool_media_to_user_messages moved the images out.
        content = content_text(message.content)
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
    if isinstance(message, UserMessage):
        return {"role": "user", "content": encode_content(message.content)}
    return {"role": message.role, "content": message.content}


def decode_request(body: Mapping[str, Any]) -> ChatRequest:
    """Read a ``/chat/completions`` request body back into a :class:`ChatRequest`.

    Tolerant of what OpenAI-compatible clients send: ``developer`` messages become system
    messages, content as a list of parts is joined to text (a user message's images and
    files become :class:`~rxreact.Image` / :class:`~rxreact.File` parts), ``reasoning_content`` or
    ``reasoning`` on assistant messages becomes the reasoning, a named ``tool_choice``
    (``{"type": "function", ...}``) becomes ``"required"``, a missing description becomes ``""``.
    Keys other than model, messages, tools, tool_choice, stream and stream_options end up in
    ``options``.

    Raises:
        ValueError: the body has no ``messages`` list or a message cannot be read
            (``pydantic.ValidationError`` is a ``ValueError``).
    """
    raw_messages = body.get("messages")
    if not isinstance(raw_messages, list):
        raise ValueError("'messages' must be a list")
    tools = tuple(_decode_tool(t) for t in body.get("tools") or ())
    return ChatRequest(
        messages=tuple(_decode_message(m) for m in raw_messages),
        tools=tools,
        tool_choice=_decode_tool_choice(body.get("tool_choice")),
        options={k: v for k, v in body.items() if k not in _KNOWN_KEYS},
    )


def _decode_message(raw: Any) -> Message:
    if not isinstance(raw, Mapping):
        raise ValueError(f"a message must be an object, got {type(raw).__name__}")
    role = raw.get("role")
    if role in ("system", "developer"):
        return SystemMessage(content=_text(raw.get("content")) or "")
    if role == "user":
        return UserMessage(content=decode_content(raw.get("content")) or "")
    if role == "assistant":
        reasoning = raw.get("reasoning_content")
        if reasoning is None:
            reasoning = raw.get("reasoning")
        return AssistantMessage(
            # The encoder writes "" for an empty answer without tool calls: read it back as None.
            content=_text(raw.get("content")) or None,
            tool_calls=tuple(_decode_tool_call(c) for c in raw.get("tool_calls") or ()),
            reasoning=reasoning if isinstance(reasoning, str) else None,
        )
    if role == "tool":
        name = raw.get("name")
        return ToolMessage(
            tool_call_id=str(raw.get("tool_call_id") or ""),
            content=_text(raw.get("content")) or "",
            name=name if isinstance(name, str) else None,
        )
    raise ValueError(f"unknown message role {role!r}")


def _text(content: Any) -> str | None:
    """String content as is; a list of parts joined from their ``text``; anything else None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or "") if isinstance(p, Mapping) else str(p) for p in content
        )
    return str(content)


def _decode_tool_call(raw: Any) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise ValueError("a tool call must be an object")
    function = raw.get("function") or {}
    arguments = function.get("arguments")
    return ToolCall(
        id=str(raw.get("id") or ""),
        name=str(function.get("name") or ""),
        arguments=arguments if isinstance(arguments, str) else "",
    )


def _decode_tool(raw: Any) -> ToolSpec:
    if not isinstance(raw, Mapping):
        raise ValueError("a tool must be an object")
    # Older clients send the function object alone, without the {"type", "function"} wrapper.
    function = raw.get("function", raw)
    return ToolSpec(
        name=str(function.get("name") or ""),
        description=str(function.get("description") or ""),
        parameters=dict(function.get("parameters") or {}),
    )


def _decode_tool_choice(raw: Any) -> ToolChoice | None:
    if isinstance(raw, str):
        return _TOOL_CHOICES.get(raw)
    if isinstance(raw, Mapping):
        return "required"
    return None
