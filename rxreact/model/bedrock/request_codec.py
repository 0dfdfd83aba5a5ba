"""A :class:`~rxreact.messages.ChatRequest` as the body of Bedrock's Converse API
(``POST /model/{modelId}/converse-stream``, and ``/converse`` for a whole answer).

How our messages map onto Converse's:

- system messages → the top-level ``system`` (``[{"text": ...}]``).
- the rest → ``messages`` whose roles alternate from ``user`` (consecutive user-side messages,
  the tool results of a round first, are ONE message, as the API requires). Content blocks:
  ``text``, ``image`` (``format`` + base64 ``source.bytes``: Converse takes no image URLs),
  ``document`` (``format``, a ``name``, base64 bytes), ``toolUse`` (``toolUseId``, ``name``,
  ``input`` as an object) and ``toolResult`` (``status: "error"`` when the tool failed). An
  assistant message is its replay items (``provider="bedrock"``: reasoning blocks with their
  signature, sent back unchanged and first), its text, then its ``toolUse`` blocks. Empty text
  blocks are left out: the API refuses them.
- tools → ``toolConfig.tools[].toolSpec`` (``inputSchema.json``); ``tool_choice`` ``auto`` →
  ``{"auto": {}}``, ``required`` → ``{"any": {}}``. Converse has no "no tools" choice, and it
  requires ``toolConfig`` while the history holds tool blocks: the forced last round
  (``none``) keeps the tools declared with no choice (the loop's instruction, already the last
  user message, asks for the answer; a call made anyway is handled as on every adapter), and
  drops ``toolConfig`` when the history has no tool block.
- options: ``max_tokens``, ``temperature``, ``top_p``, ``stop`` → ``inferenceConfig``
  (``maxTokens``, ``temperature``, ``topP``, ``stopSequences``); Converse's own fields
  (``inferenceConfig``, ``additionalModelRequestFields``, ``guardrailConfig``...) pass through;
  any other key (a model's own, ``top_k``) goes into ``additionalModelRequestFields``.
- ``response_format`` → ``outputConfig.textFormat`` (Bedrock's structured outputs) for a
  ``json_schema``, its schema sent as a JSON string as the API wants, every object closed; a
  ``json_object`` (the judge's) becomes an instruction in ``system``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from rxreact.model.anthropic.request_codec import JSON_INSTRUCTION
from rxreact.model.bedrock.wire import PROVIDER

__all__ = ["encode_request"]

_INFERENCE = {"max_tokens": "maxTokens", "temperature": "temperature", "top_p": "topP"}
_CONVERSE_FIELDS = frozenset(
    {
        "inferenceConfig",
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "guardrailConfig",
        "performanceConfig",
        "promptVariables",
        "requestMetadata",
        "serviceTier",
        "outputConfig",
    }
)
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}
_TOOL_CHOICES: dict[str, dict[str, Any]] = {"auto": {"auto": {}}, "required": {"any": {}}}


def encode_request(
    request: ChatRequest, *, max_tokens: int | None, default_options: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The JSON body of a Converse request for ``request`` (the model is in the path).

    Raises:
        InvalidArgumentError: a part Converse cannot take (an image URL, an image or file type
            it does not know).
    """
    options = {**(default_options or {}), **request.options}
    response_format = options.pop("response_format", None)
    options.pop("tool_choice", None)  # the request's own choice decides (module docstring)
    options.pop("stream", None)
    system = [{"text": m.content} for m in request.messages if isinstance(m, SystemMessage)]
    messages = _messages([m for m in request.messages if not isinstance(m, SystemMessage)])
    body: dict[str, Any] = {"messages": messages}
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
        if kind == "json_schema":
            spec = response_format.get("json_schema") or {}
            schema = json.dumps(closed_schema(spec.get("schema") or {}), ensure_ascii=False)
            structure = {"jsonSchema": {"schema": schema, "name": spec.get("name") or "answer"}}
            body["outputConfig"] = {"textFormat": {"type": "json_schema", "structure": structure}}
        elif kind == "json_object":
            system.append({"text": JSON_INSTRUCTION})
    if system:
        body["system"] = system
    inference: dict[str, Any] = {} if max_tokens is None else {"maxTokens": max_tokens}
    extra: dict[str, Any] = {}
    for key, value in options.items():
        if key in _INFERENCE:
            inference[_INFERENCE[key]] = value
        elif key == "stop":
            inference["stopSequences"] = [value] if isinstance(value, str) else list(value)
        elif key in _CONVERSE_FIELDS:
            body[key] = value
        else:
            extra[key] = value
    if inference:
        body["inferenceConfig"] = {**inference, **body.get("inferenceConfig", {})}
    if extra:
        body["additionalModelRequestFields"] = {
            **extra,
            **body.get("additionalModelRequestFields", {}),
        }
    tool_config = _tool_config(request, messages)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    return body


def _tool_config(request: ChatRequest, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not request.tools:
        return None
    choice = request.tool_choice
    if choice == "none" and not _has_tool_blocks(messages):
        return None
    config: dict[str, Any] = {
        "tools": [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description or t.name,
                    "inputSchema": {"json": t.parameters},
                }
            }
            for t in request.tools
        ]
    }
    if isinstance(choice, str) and choice in _TOOL_CHOICES:
        config["toolChoice"] = _TOOL_CHOICES[choice]
    return config


def _has_tool_blocks(messages: list[dict[str, Any]]) -> bool:
    return any(
        "toolUse" in block or "toolResult" in block
        for message in messages
        for block in message["content"]
    )


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            content, role = _assistant(message), "assistant"
        elif isinstance(message, ToolMessage):
            content, role = [_tool_result(message)], "user"
        else:
            content, role = _content(message.content), "user"
        if not content:
            continue  # an empty message: the API refuses empty content
        if out and out[-1]["role"] == role:
            out[-1]["content"] += content  # one message per turn: roles alternate
        else:
            out.append({"role": role, "content": content})
    return out


def _assistant(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks = [dict(item.data) for item in message.replay if item.provider == PROVIDER]
    if message.content:
        blocks.append({"text": message.content})
    for call in message.tool_calls:
        arguments = arguments_object(call.arguments)
        blocks.append({"toolUse": {"toolUseId": call.id, "name": call.name, "input": arguments}})
    return blocks


def _tool_result(message: ToolMessage) -> dict[str, Any]:
    content = message.content
    result: dict[str, Any] = {
        "toolUseId": message.tool_call_id,
        "content": [{"text": content or " "}] if isinstance(content, str) else _content(content),
    }
    if message.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _content(content: str | tuple[Text | Image | File, ...]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"text": content}] if content else []
    return [_part(part) for part in content if not (isinstance(part, Text) and not part.text)]


def _part(part: Text | Image | File) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if part.url is not None and not part.url.startswith("data:"):
        raise InvalidArgumentError(
            "Bedrock's Converse API takes images and files as bytes, not URLs: pass data= "
            f"or a data: URL ({part.url[:60]})"
        )
    media_type, data = inline_data(part, "Bedrock")
    if isinstance(part, Image):
        image_format = _IMAGE_FORMATS.get(media_type)
        if image_format is None:
            raise InvalidArgumentError(
                f"Bedrock takes images as {', '.join(sorted(_IMAGE_FORMATS))}, not {media_type}"
            )
        return {"image": {"format": image_format, "source": {"bytes": data}}}
    document_format = _DOCUMENT_FORMATS.get(media_type)
    if document_format is None:
        raise InvalidArgumentError(
            f"Bedrock takes documents as {', '.join(sorted(_DOCUMENT_FORMATS))}, not {media_type}"
        )
    return {
        "document": {
            "format": document_format,
            "name": _document_name(part.name),
            "source": {"bytes": data},
        }
    }


def _document_name(name: str | None) -> str:
    """A name Converse accepts: letters, digits, single spaces, hyphens, parentheses and
    brackets (a file name's dots and underscores are not among them)."""
    allowed = "".join(c if c.isalnum() or c in " -()[]" else "-" for c in (name or "document"))
    return " ".join(allowed.split()) or "document"
