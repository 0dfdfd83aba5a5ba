"""A Converse request body as the mock reads it: the rules Bedrock enforces (HTTP 400
``ValidationException``) and the body read back as a :class:`~rxreact.messages.ChatRequest`
for script functions.

The rules, as Bedrock states them: ``messages`` is a non-empty list starting with a ``user``
message, roles alternate, no content list is empty and no text block is blank; every
``toolUse`` of an assistant message is answered by a ``toolResult`` with its id in the next
user message, and a ``toolResult`` answers a call of the message before it; ``toolConfig`` must
be defined while the messages hold tool blocks; ``toolChoice`` needs ``tools``; a
``reasoningContent`` block sent back carries the signature the mock gave it (Bedrock checks
Claude's thinking signatures). Unknown top-level keys are refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
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
from rxreact.model.bedrock.wire import PROVIDER

__all__ = ["decode_request", "request_problem", "sign_reasoning"]

_KEY = b"rxreact-mock-bedrock"
_TOP_LEVEL = frozenset(
    {
        "messages",
        "system",
        "inferenceConfig",
        "toolConfig",
        "guardrailConfig",
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "promptVariables",
        "requestMetadata",
        "performanceConfig",
        "serviceTier",
        "outputConfig",
    }
)
_IMAGE_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}
_CHOICES: dict[str, ToolChoice] = {"auto": "auto", "any": "required", "tool": "required"}


def sign_reasoning(text: str) -> str:
    """The signature the mock gives a reasoning block with this text."""
    mac = hmac.new(_KEY, text.encode(), hashlib.sha256).digest()
    return base64.b64encode(mac).decode()


def request_problem(body: dict[str, Any]) -> str | None:
    """The 400 message Bedrock gives for this body, if any (the first problem found)."""
    for key in body:
        if key not in _TOP_LEVEL:
            return f"Malformed input request: extraneous key [{key}] is not permitted"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "A conversation must start with a user message."
    tools_defined = bool((body.get("toolConfig") or {}).get("tools"))
    config = body.get("toolConfig")
    if config is not None and "toolChoice" in config and not tools_defined:
        return "The toolConfig field must have tools when toolChoice is set."
    pending: set[str] = set()
    uses_tools = False
    for i, message in enumerate(messages):
        role, content = message.get("role"), message.get("content")
        expected = "user" if i % 2 == 0 else "assistant"
        if role != expected:
            return (
                "A conversation must alternate between user and assistant roles. "
                f"messages.{i} has role {role!r}, expected {expected!r}."
            )
        if not isinstance(content, list) or not content:
            return f"The content field in the Message object at messages.{i} is empty."
        answered: set[str] = set()
        for block in content:
            if not isinstance(block, dict) or len(block) != 1:
                return f"messages.{i}: each content block must have exactly one member"
            kind, value = next(iter(block.items()))
            if kind == "text" and (not isinstance(value, str) or not value.strip()):
                return f"messages.{i}: The text field in the ContentBlock object is blank."
            if kind == "toolUse":
                uses_tools = True
                if role != "assistant":
                    return f"messages.{i}: toolUse blocks are allowed in assistant messages only"
                pending.add(value.get("toolUseId"))
                if not isinstance(value.get("input"), dict):
                    return f"messages.{i}: toolUse.input must be an object"
            elif kind == "toolResult":
                uses_tools = True
                if role != "user" or value.get("toolUseId") not in pending:
                    return (
                        f"messages.{i}: The toolResult block with id "
                        f"{value.get('toolUseId')!r} does not answer a toolUse of the "
                        "previous turn."
                    )
                answered.add(value["toolUseId"])
            elif kind == "reasoningContent":
                problem = _reasoning_problem(i, value)
                if problem is not None:
                    return problem
        if role == "user":
            if pending - answered:
                missing = ", ".join(sorted(str(x) for x in pending - answered))
                return (
                    f"messages.{i}: Expected toolResult blocks for the toolUse ids {missing} "
                    "of the previous turn."
                )
            pending = set()
    if uses_tools and not tools_defined:
        return (
            "The toolConfig field must be defined when using toolUse and toolResult content blocks."
        )
    return None


def _reasoning_problem(i: int, value: Any) -> str | None:
    text = (value or {}).get("reasoningText") if isinstance(value, dict) else None
    if text is None:
        return (
            None
            if isinstance(value, dict) and "redactedContent" in value
            else (f"messages.{i}: a reasoningContent block needs reasoningText or redactedContent")
        )
    signature = text.get("signature")
    if not isinstance(signature, str) or not hmac.compare_digest(
        signature, sign_reasoning(str(text.get("text", "")))
    ):
        return f"messages.{i}: The reasoning block's signature is invalid."
    return None


def decode_request(body: dict[str, Any]) -> ChatRequest:
    """A Converse body as a :class:`ChatRequest` (for script functions)."""
    messages: list[Message] = [SystemMessage(content=b["text"]) for b in body.get("system") or ()]
    for message in body["messages"]:
        blocks = message["content"]
        if message["role"] == "assistant":
            messages.append(_assistant(blocks))
            continue
        parts: list[Text | Image | File] = []
        for block in blocks:
            if "toolResult" in block:
                result = block["toolResult"]
                content = result.get("content") or []
                texts = [c["text"] for c in content if "text" in c]
                messages.append(
                    ToolMessage(
                        tool_call_id=result["toolUseId"],
                        content="".join(texts)
                        if len(texts) == len(content)
                        else tuple(_part(c) for c in content),
                        is_error=result.get("status") == "error",
                    )
                )
            else:
                parts.append(_part(block))
        if parts:
            single = len(parts) == 1 and isinstance(parts[0], Text)
            messages.append(UserMessage(content=parts[0].text if single else tuple(parts)))  # type: ignore[union-attr]
    config = body.get("toolConfig") or {}
    tools = tuple(
        ToolSpec(
            name=t["toolSpec"]["name"],
            description=t["toolSpec"].get("description") or "",
            parameters=t["toolSpec"]["inputSchema"]["json"],
        )
        for t in config.get("tools") or ()
    )
    choice = config.get("toolChoice")
    options: dict[str, Any] = {}
    if body.get("outputConfig"):
        schema = body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]
        options["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.get("name"), "schema": json.loads(schema["schema"])},
        }
    return ChatRequest(
        messages=tuple(messages),
        tools=tools,
        tool_choice=_CHOICES.get(next(iter(choice))) if isinstance(choice, dict) else None,
        options=options,
    )


def _assistant(blocks: list[dict[str, Any]]) -> AssistantMessage:
    texts, thoughts, calls, replay = [], [], [], []
    for block in blocks:
        if "text" in block:
            texts.append(block["text"])
        elif "toolUse" in block:
            use = block["toolUse"]
            arguments = json.dumps(use.get("input") or {}, ensure_ascii=False)
            calls.append(ToolCall(id=use["toolUseId"], name=use["name"], arguments=arguments))
        elif "reasoningContent" in block:
            replay.append(ReplayItem(provider=PROVIDER, data=block))
            thought = (block["reasoningContent"].get("reasoningText") or {}).get("text")
            if thought:
                thoughts.append(thought)
    return AssistantMessage(
        content="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning="\n\n".join(thoughts) or None,
        replay=tuple(replay),
    )


def _part(block: dict[str, Any]) -> Text | Image | File:
    if "text" in block:
        return Text(text=block["text"])
    if "image" in block:
        image = block["image"]
        media_type = _IMAGE_TYPES.get(image["format"], f"image/{image['format']}")
        return Image(data_base64=image["source"]["bytes"], media_type=media_type)
    document = block["document"]
    return File(
        data_base64=document["source"]["bytes"],
        media_type="application/pdf" if document["format"] == "pdf" else "text/plain",
        name=document.get("name"),
    )
