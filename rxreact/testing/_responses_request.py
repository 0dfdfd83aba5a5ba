"""Requests to the mock server's Responses dialect: the real API's 400s, and decoding.

:func:`request_problem` gives the message the real API answers with (HTTP 400) for: unknown
parameters (and ``response_format``, which moved to ``text.format``), tools not in the flat
function shape, a ``json_schema`` format without a name, a ``function_call_output`` that
answers no earlier ``function_call``, a reasoning item whose encrypted content was changed
(or, with ``store: false``, that has none to be read from), and a ``function_call`` from a
response that reasoned (its item id, or the call id the mock wrote, names the reasoning item)
without that reasoning item before it; with ``typed_items``, an input item without its
``type`` (llama-server's rule).
:func:`decode_request` reads a body back into a :class:`~rxreact.messages.ChatRequest` for
script functions. :func:`seal` makes the encrypted reasoning these checks recognise.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
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
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.openai.responses_wire import PROVIDER

__all__ = ["decode_request", "request_problem", "seal"]

_KEY = secrets.token_bytes(16)
"""Signs the mock's encrypted reasoning (per process: a server restart is not a concern)."""
_PARAMETERS = frozenset(
    [
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
        "store",
        "include",
        "reasoning",
        "text",
        "temperature",
        "top_p",
        "top_logprobs",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "previous_response_id",
        "conversation",
        "truncation",
        "user",
        "service_tier",
        "background",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
    ]
)


def seal(item_id: str, summary: str) -> str:
    """An ``encrypted_content`` for a reasoning item: new on every call, like the real one."""
    payload = base64.urlsafe_b64encode(
        json.dumps({"id": item_id, "summary": summary, "n": secrets.token_hex(4)}).encode()
    ).decode()
    tag = hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()[:24]
    return f"mock.{payload}.{tag}"


def _opened(sealed: str) -> dict[str, Any] | None:
    """What :func:`seal` sealed, or ``None`` when it is not the mock's unchanged token."""
    try:
        _, payload, tag = sealed.split(".")
        good = hmac.new(_KEY, payload.encode(), hashlib.sha256).hexdigest()[:24]
        if not hmac.compare_digest(tag, good):
            return None
        opened = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, TypeError):
        return None
    return opened if isinstance(opened, dict) else None


def _summary_text(item: dict[str, Any]) -> str:
    return "\n\n".join(str(p.get("text") or "") for p in item.get("summary") or ())


def request_problem(body: dict[str, Any], *, typed_items: bool = False) -> str | None:
    """The 400 message the real Responses API gives for this body, if any.

    ``typed_items``: every input item must say its ``type``, as llama.cpp's ``llama-server``
    (and LiteLLM in front of it) require; OpenAI takes a ``role`` alone as a message.
    """
    if "response_format" in body:
        return (
            "Unsupported parameter: 'response_format'. In the Responses API, this parameter "
            "has moved to 'text.format'."
        )
    unknown = sorted(set(body) - _PARAMETERS)
    if unknown:
        return f"Unknown parameter: '{unknown[0]}'."
    if not body.get("model"):
        return "Missing required parameter: 'model'."
    for i, tool in enumerate(body.get("tools") or ()):
        if not isinstance(tool, dict) or tool.get("type") != "function" or "function" in tool:
            return f"Invalid value for 'tools[{i}]': expected a flat function tool."
        if not tool.get("name"):
            return f"Missing required parameter: 'tools[{i}].name'."
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema" and not text_format.get("name"):
        return "Missing required parameter: 'text.format.name'."
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return "Invalid type for 'input': expected a string or an array of input items."
    calls: set[str] = set()
    reasoning: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return f"Invalid type for 'input[{i}]': expected an object."
        if typed_items and "type" not in item:
            return "Cannot determine type of 'item'"
        kind = item.get("type", "message")
        if kind == "reasoning":
            problem = _reasoning_problem(item, body.get("store", True))
            if problem:
                return problem
            reasoning.add(str(item.get("id")))
        elif kind == "function_call":
            call_id = str(item.get("call_id"))
            item_id = str(item.get("id") or call_id)
            # The reasoning item a call came from: named by its id (fc_<rs id>_<n>) or, as the
            # mock writes them, by its call_id (call_0@<rs id>).
            needed = call_id.rpartition("@")[2] if "@rs_" in call_id else None
            if item_id.startswith("fc_rs_"):
                needed = item_id[3:].rsplit("_", 1)[0]
            if needed is not None and needed not in reasoning:
                return (
                    f"Item '{item_id}' of type 'function_call' was provided without its "
                    f"required 'reasoning' item: '{needed}'."
                )
            calls.add(call_id)
        elif kind == "function_call_output":
            if item.get("call_id") not in calls:
                return (
                    "No tool call found for function call output with call_id "
                    f"{item.get('call_id')}."
                )
        elif kind != "message" or item.get("role") not in (
            "user",
            "assistant",
            "system",
            "developer",
        ):
            return f"Invalid value for 'input[{i}]': unsupported item {kind!r}."
    return None


def _reasoning_problem(item: dict[str, Any], store: Any) -> str | None:
    item_id = item.get("id")
    sealed = item.get("encrypted_content")
    if sealed is None:
        if store is False:
            return (
                f"Item with id '{item_id}' not found. Items are not persisted when `store` "
                "is set to false. Try again with `store` set to true, or remove this item "
                "from your input."
            )
        return None
    opened = _opened(str(sealed))
    if (
        opened is None
        or opened.get("id") != item_id
        or opened.get("summary") != _summary_text(item)
    ):
        return f"The encrypted content for item {item_id} could not be verified."
    return None


def decode_request(body: dict[str, Any]) -> ChatRequest:
    """A Responses request body as a :class:`ChatRequest` (for script functions): reasoning
    items and function calls join the assistant message they belong to."""
    messages: list[Message] = []
    if body.get("instructions"):
        messages.append(SystemMessage(content=str(body["instructions"])))
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    turn: dict[str, Any] | None = None  # the assistant message being gathered
    for item in items or ():
        kind = item.get("type", "message")
        is_assistant = kind in ("reasoning", "function_call") or item.get("role") == "assistant"
        if is_assistant:
            if turn is None:
                turn = {"content": None, "tool_calls": [], "replay": []}
            if kind == "reasoning":
                turn["replay"].append(ReplayItem(provider=PROVIDER, data=item))
            elif kind == "function_call":
                turn["tool_calls"].append(
                    ToolCall(
                        id=item["call_id"], name=item["name"], arguments=item.get("arguments") or ""
                    )
                )
            else:
                turn["content"] = _text(item.get("content"))
            continue
        if turn is not None:
            messages.append(AssistantMessage(**turn))
            turn = None
        if kind == "function_call_output":
            messages.append(
                ToolMessage(tool_call_id=item["call_id"], content=_content(item.get("output")))
            )
        elif item.get("role") == "user":
            messages.append(UserMessage(content=_content(item.get("content"))))
        else:
            messages.append(SystemMessage(content=_text(item.get("content"))))
    if turn is not None:
        messages.append(AssistantMessage(**turn))
    tools = tuple(
        ToolSpec(
            name=t["name"],
            description=t.get("description") or "",
            parameters=t.get("parameters") or {},
        )
        for t in body.get("tools") or ()
    )
    choice = body.get("tool_choice")
    skip = {"model", "input", "instructions", "tools", "tool_choice", "stream"}
    return ChatRequest(
        messages=tuple(messages),
        tools=tools,
        tool_choice=choice if choice in ("auto", "none", "required") else None,
        options={k: v for k, v in body.items() if k not in skip},
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text") or "") for p in content or ())


def _content(content: Any) -> Any:
    """A string as is; a part list as rxreact parts."""
    if isinstance(content, str) or content is None:
        return content or ""
    parts: list[Text | Image | File] = []
    for part in content:
        kind = part.get("type")
        if kind == "input_image":
            parts.append(Image(url=part.get("image_url")))
        elif kind == "input_file":
            url = part.get("file_url") or part.get("file_data")
            parts.append(File(url=url, name=part.get("filename")))
        else:
            parts.append(Text(text=str(part.get("text") or "")))
    return tuple(parts)
