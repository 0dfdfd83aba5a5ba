"""A :class:`~rxreact.messages.ChatRequest` → the JSON body of ``POST /responses``.

- The leading system messages become ``instructions``; a later one (the agent's forced last
  round says why it ends) stays in place as a ``system`` message item.
- The history becomes ``input`` items, each with its ``type`` (OpenAI infers ``"message"``
  from a ``role``; llama.cpp's ``llama-server`` and LiteLLM answer 400 "Cannot determine
  type of 'item'"): user messages (text, ``input_image``, ``input_file``),
  for each assistant message its reasoning items (the :class:`~rxreact.messages.ReplayItem` s
  tagged ``"openai-responses"``, sent back unchanged, before what they led to; another
  provider's items are dropped), its text (with the ``phase`` the provider gave it, when it
  gave one), its ``function_call`` s (``call_id``, name,
  arguments), and for each tool result a ``function_call_output`` (a string, or a list of
  ``input_text`` / ``input_image`` / ``input_file`` when the tool returned parts).
- Tools are flat ``{"type": "function", name, description, parameters}`` with
  ``"strict": false``: the API makes an omitted ``strict`` strict where it can, which makes
  every optional argument required; rxreact's tool schemas are not written for that.
- ``reasoning`` passes through; with ``store=False`` the body asks for
  ``include: ["reasoning.encrypted_content"]``, since reasoning items are then replayed by
  their content, not looked up by id.
- A ``response_format`` option (the judge's ``json_object``, a typed answer's
  ``json_schema``) becomes the API's native structured output, ``text.format``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    File,
    Image,
    SystemMessage,
    Text,
    ToolMessage,
    UserMessage,
)
from rxreact.model.openai.responses_wire import PROVIDER

__all__ = ["IMAGE_TYPES", "encode_request", "text_format"]

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/webp", "image/gif"})
"""The image types the API reads (a URL image is not checked: the provider reads it)."""

_TOOL_ONLY_KEYS = ("tool_choice", "parallel_tool_calls")
_ENCRYPTED = "reasoning.encrypted_content"


def encode_request(
    request: ChatRequest,
    *,
    model: str,
    stream: bool,
    reasoning: Mapping[str, Any] | None = None,
    store: bool = False,
    default_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of a ``POST /responses`` for ``request`` (rules: the module doc).

    Args:
        request: the messages, tools and options to send.
        model: the ``model`` field.
        stream: ask for an SSE stream of events.
        reasoning: the ``reasoning`` object (``{"effort": "low", "summary": "auto"}``).
        store: the ``store`` field; ``False`` also asks for the encrypted reasoning.
        default_options: body keys sent unless ``request.options`` sets them.

    Raises:
        InvalidArgumentError: a part the API cannot take (an image of another type).
    """
    messages = list(request.messages)
    leading: list[str] = []
    while messages and isinstance(first := messages[0], SystemMessage):
        leading.append(first.content)
        messages.pop(0)
    body: dict[str, Any] = {"model": model}
    if leading:
        body["instructions"] = "\n\n".join(leading)
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            _assistant(message, items)
        elif isinstance(message, ToolMessage):
            output = message.content
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": output if isinstance(output, str) else _parts(output),
                }
            )
        elif isinstance(message, UserMessage):
            content = message.content
            user = content if isinstance(content, str) else _parts(content)
            items.append({"type": "message", "role": "user", "content": user})
        else:
            items.append({"type": "message", "role": "system", "content": message.content})
    body["input"] = items
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
    if reasoning is not None:
        body["reasoning"] = dict(reasoning)
    body["store"] = store
    body["stream"] = stream
    for options in (default_options, request.options):
        if options:
            body.update(options)
    if not store:
        # Added to what the options include: without it no reasoning item could be replayed.
        include = list(body.get("include") or ())
        if _ENCRYPTED not in include:
            include.append(_ENCRYPTED)
        body["include"] = include
    if request.options and request.tool_choice is not None and request.tools:
        body["tool_choice"] = request.tool_choice  # the agent's forced round wins
    if not request.tools:
        for key in _TOOL_ONLY_KEYS:
            body.pop(key, None)
    response_format = body.pop("response_format", None)
    if response_format is not None:
        body["text"] = {**body.get("text", {}), "format": text_format(response_format)}
    return body


def text_format(response_format: Mapping[str, Any]) -> dict[str, Any]:
    """Chat completions' ``response_format`` as the Responses API's ``text.format``: the
    ``json_schema`` wrapper's fields (name, schema, strict, description) move up a level."""
    kind = response_format.get("type")
    if kind != "json_schema":
        return dict(response_format)
    spec = response_format.get("json_schema") or {}
    out: dict[str, Any] = {"type": "json_schema", "name": spec.get("name") or "output"}
    for key in ("schema", "description", "strict"):
        if key in spec:
            out[key] = spec[key]
    return out


def _assistant(message: AssistantMessage, items: list[dict[str, Any]]) -> None:
    own = [item.data for item in message.replay if item.provider == PROVIDER]
    # Reasoning first: a function call must follow the reasoning item that produced it.
    items.extend(dict(data) for data in own if data.get("type") != "message")
    if message.content:
        text: dict[str, Any] = {"type": "message", "role": "assistant", "content": message.content}
        phases = [data["phase"] for data in own if data.get("type") == "message"]
        if phases:
            text["phase"] = phases[-1]  # one text per round: the latest label is its own
        items.append(text)
    items.extend(
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}
        for c in message.tool_calls
    )


def _parts(parts: tuple[ContentPart, ...]) -> list[dict[str, Any]]:
    return [_part(part) for part in parts]


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        if part.url is not None:
            return {"type": "input_image", "image_url": part.url, "detail": "auto"}
        if part.media_type not in IMAGE_TYPES:
            raise InvalidArgumentError(
                f"the Responses API takes PNG, JPEG, WEBP and GIF images, not {part.media_type}"
            )
        url = f"data:{part.media_type};base64,{part.data_base64}"
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    assert isinstance(part, File)
    if part.url is not None:
        out: dict[str, Any] = {"type": "input_file", "file_url": part.url}
    else:
        data = f"data:{part.media_type};base64,{part.data_base64}"
        out = {"type": "input_file", "file_data": data, "filename": part.name or "file"}
    if part.name is not None:
        out["filename"] = part.name
    return out
