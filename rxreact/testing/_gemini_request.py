"""Requests to the mock's native Gemini dialect: the real API's 400s, and decoding.

:func:`request_problem` gives Gemini's message (HTTP 400 INVALID_ARGUMENT) for: an unknown
body field or ``generationConfig`` field; no ``contents``, a role other than ``user`` /
``model``, or two contents of one role in a row (turns must alternate); a
``functionResponse`` that answers no call of the model content just before it (by name, and
by id where it gives one), or a model content whose calls are not all answered by the next
user content; a ``toolConfig`` without
tools, a declaration's schema outside Gemini's subset (lower-case types, JSON-Schema-only
keys); ``responseJsonSchema`` without ``responseMimeType: application/json``; and thought
signatures under Google's rules (:mod:`rxreact.testing._gemini_signatures`): the first call of
each step of the current turn must carry its own (or the placeholder), and none may come back
changed. :func:`decode_request` reads a body back into a
:class:`~rxreact.messages.ChatRequest` for script functions.
"""

from __future__ import annotations

import json
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    Message,
    SystemMessage,
    Text,
    ToolCall,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.model.gemini._schema import SCHEMA_FIELDS
from rxreact.testing._gemini_openai import signature_error
from rxreact.testing._gemini_signatures import sign_text

__all__ = ["decode_request", "request_problem"]

_FIELDS = frozenset(
    {
        "contents",
        "tools",
        "toolConfig",
        "safetySettings",
        "systemInstruction",
        "generationConfig",
        "cachedContent",
    }
)
_GENERATION = frozenset(
    {
        "stopSequences",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseModalities",
        "candidateCount",
        "maxOutputTokens",
        "temperature",
        "topP",
        "topK",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "responseLogprobs",
        "logprobs",
        "thinkingConfig",
        "mediaResolution",
    }
)
_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
# The keys of Gemini's Schema object: those the codec keeps, and the structural ones.
_SCHEMA_KEYS = frozenset({*SCHEMA_FIELDS, "type", "properties", "required", "items", "anyOf"})


_NO_RESPONSE = (
    "Please ensure that function response turn comes immediately after a function call turn."
)


def _unknown(name: str, where: str = "") -> str:
    return f'Invalid JSON payload received. Unknown name "{name}"{where}: Cannot find field.'


def request_problem(body: dict[str, Any]) -> str | None:
    """The 400 message Gemini gives for this body, if any (the rules: the module doc)."""
    for key in body:
        if key not in _FIELDS:
            return _unknown(key)
    generation = body.get("generationConfig") or {}
    for key in generation:
        if key not in _GENERATION:
            return _unknown(key, " at 'generation_config'")
    if "responseJsonSchema" in generation and generation.get("responseMimeType") != (
        "application/json"
    ):
        return "responseJsonSchema requires responseMimeType to be application/json."
    if body.get("toolConfig") and not body.get("tools"):
        return "Function calling config is set without function_declarations."
    for declaration in (
        d for t in body.get("tools") or () for d in t.get("functionDeclarations") or ()
    ):
        problem = _schema_problem(declaration.get("parameters"), declaration.get("name"))
        if problem:
            return problem
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents:
        return "* GenerateContentRequest.contents: contents is not specified"
    return _history_problem(contents)


def _schema_problem(schema: Any, tool: Any, where: str = "parameters") -> str | None:
    if schema is None:
        return None
    if not isinstance(schema, dict):
        return f"Invalid schema for function '{tool}' at {where}."
    for key in schema:
        if key not in _SCHEMA_KEYS:
            return _unknown(key, f" at 'tools[0].function_declarations[{tool}].{where}'")
    kind = schema.get("type")
    if kind is not None and kind not in _TYPES:
        return f"Invalid value at '{where}.type' (type.googleapis.com/google.ai.Type), \"{kind}\""
    for name, sub in (schema.get("properties") or {}).items():
        problem = _schema_problem(sub, tool, f"{where}.properties[{name}]")
        if problem:
            return problem
    for i, sub in enumerate(schema.get("anyOf") or ()):
        problem = _schema_problem(sub, tool, f"{where}.any_of[{i}]")
        if problem:
            return problem
    return _schema_problem(schema.get("items"), tool, f"{where}.items")


def _history_problem(contents: list[Any]) -> str | None:
    last_text = -1  # the last user content with standard content: the current turn's start
    previous_role = None
    open_calls: list[str] = []
    open_ids: set[str] = set()
    for i, content in enumerate(contents):
        role = content.get("role") if isinstance(content, dict) else None
        if role not in ("user", "model"):
            return f"Please use a valid role: user, model (contents[{i}] has {role!r})."
        if role == previous_role:
            return "Please ensure that multiturn requests alternate between user and model."
        previous_role = role
        parts = content.get("parts") or []
        if not parts:
            return f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty"
        answered = [p["functionResponse"].get("name") for p in parts if "functionResponse" in p]
        if role == "user":
            if answered and sorted(map(str, answered)) != sorted(open_calls):
                return (
                    "Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn."
                )
            if open_calls and not answered:
                return _NO_RESPONSE
            for part in parts:
                answer_id = (part.get("functionResponse") or {}).get("id")
                if answer_id is not None and answer_id not in open_ids:
                    return f"Function response id {answer_id!r} matches no function call id."
            if any("text" in p for p in parts):
                last_text = i
        calls = [p["functionCall"] for p in parts if "functionCall" in p]
        open_calls = [str(c.get("name")) for c in calls]
        open_ids = {c["id"] for c in calls if c.get("id")}
    if open_calls:
        return _NO_RESPONSE
    return _signatures_problem(contents, last_text)


def _signatures_problem(contents: list[dict[str, Any]], last_text: int) -> str | None:
    steps: list[list[tuple[str, Any, Any]]] = []
    turn_start = 0
    for i, content in enumerate(contents):
        if content["role"] != "model":
            continue
        calls = [p for p in content["parts"] if "functionCall" in p]
        for part in content["parts"]:
            text = part.get("text")
            signature = part.get("thoughtSignature")
            if text is not None and signature is not None and signature != sign_text(text):
                return "Corrupted thought signature."
        if not calls:
            continue
        if i < last_text:
            turn_start += 1
        steps.append(
            [
                (
                    str(p["functionCall"].get("name")),
                    p["functionCall"].get("args") or {},
                    p.get("thoughtSignature"),
                )
                for p in calls
            ]
        )
    return signature_error(steps, turn_start)


def decode_request(body: dict[str, Any]) -> ChatRequest:
    """A Gemini body as a :class:`ChatRequest` (for script functions): a call without an id
    is named by where it stands (``call_<content>_<n>``), and its response answers it."""
    messages: list[Message] = []
    system = body.get("systemInstruction")
    if system:
        messages.append(SystemMessage(content=_joined(system.get("parts") or ())))
    pending: list[ToolCall] = []
    for i, content in enumerate(body.get("contents") or ()):
        parts = content.get("parts") or ()
        if content.get("role") == "model":
            pending = [
                ToolCall(
                    id=str(p["functionCall"].get("id") or f"call_{i}_{n}"),
                    name=str(p["functionCall"].get("name")),
                    arguments=json.dumps(p["functionCall"].get("args") or {}),
                )
                for n, p in enumerate(q for q in parts if "functionCall" in q)
            ]
            text = _joined(p for p in parts if not p.get("thought"))
            messages.append(AssistantMessage(content=text or None, tool_calls=tuple(pending)))
            continue
        answers = [p["functionResponse"] for p in parts if "functionResponse" in p]
        for n, answer in enumerate(answers):
            call_id = answer.get("id") or (pending[n].id if n < len(pending) else f"call_{n}")
            response = answer.get("response") or {}
            result = str(response.get("result", response.get("error", json.dumps(response))))
            nested = _user_content(answer.get("parts") or [])  # Gemini 3's multimodal response
            media = (Text(text=nested),) if isinstance(nested, str) and nested else nested
            content = (Text(text=result), *media) if media else result
            messages.append(
                ToolMessage(
                    tool_call_id=str(call_id),
                    content=content,
                    name=answer.get("name"),
                    is_error="error" in response and "result" not in response,
                )
            )
        others = [p for p in parts if "functionResponse" not in p]
        if others:
            messages.append(UserMessage(content=_user_content(others)))
        pending = []
    tools = tuple(
        ToolSpec(
            name=str(d.get("name")),
            description=str(d.get("description") or ""),
            parameters=_json_schema(d.get("parameters") or {"type": "OBJECT", "properties": {}}),
        )
        for t in body.get("tools") or ()
        for d in t.get("functionDeclarations") or ()
    )
    mode = ((body.get("toolConfig") or {}).get("functionCallingConfig") or {}).get("mode")
    choice = {"NONE": "none", "ANY": "required", "AUTO": "auto"}.get(str(mode))
    skip = {"contents", "tools", "toolConfig", "systemInstruction"}
    return ChatRequest(
        messages=tuple(messages),
        tools=tools,
        tool_choice=choice,
        options={k: v for k, v in body.items() if k not in skip},
    )


def _joined(parts: Any) -> str:
    return "".join(str(p.get("text") or "") for p in parts if "text" in p)


def _user_content(parts: list[dict[str, Any]]) -> str | tuple[Text | Image | File, ...]:
    if all("text" in p for p in parts):
        return _joined(parts)
    out: list[Text | Image | File] = []
    for part in parts:
        if "text" in part:
            out.append(Text(text=str(part["text"])))
        elif "inlineData" in part:
            data = part["inlineData"]
            kind = str(data.get("mimeType") or "")
            media = Image if kind.startswith("image/") else File
            out.append(media(data_base64=data.get("data"), media_type=kind))
        elif "fileData" in part:
            data = part["fileData"]
            kind = str(data.get("mimeType") or "")
            media = Image if kind.startswith("image/") else File
            out.append(media(url=data.get("fileUri"), media_type=kind or None))
    return tuple(out)


def _json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Gemini's schema back as JSON Schema (lower-case types), as the weather desk reads it."""
    out = {k: v for k, v in schema.items() if k not in ("properties", "items", "anyOf")}
    if isinstance(schema.get("type"), str):
        out["type"] = schema["type"].lower()
    if "properties" in schema:
        out["properties"] = {k: _json_schema(v) for k, v in schema["properties"].items()}
    if "items" in schema:
        out["items"] = _json_schema(schema["items"])
    if "anyOf" in schema:
        out["anyOf"] = [_json_schema(s) for s in schema["anyOf"]]
    return out
