"""A :class:`~rxreact.messages.ChatRequest` → the JSON body of Gemini's ``generateContent``.

- The leading system messages become ``systemInstruction``; a later one is text in the user
  content where it stands.
- The history becomes ``contents`` of role ``user`` and ``model``, which Gemini requires to
  alternate: consecutive messages of one role share one content, so a round's function
  responses and the forced round's instruction after them go in the same user content.
- An assistant message is a ``model`` content: its text (with the thought signature Gemini
  put on it), then a ``functionCall`` part per call (``name``, ``args`` as an object, the
  ``id`` when Gemini gave one) with the call's thought signature, as it came
  (:class:`~rxreact.messages.ReplayItem` s tagged ``"gemini"``; another provider's are
  dropped). In the current turn (after the last user message), the first call of each step
  without a signature of its own (a call another model made) gets Google's documented
  placeholder, without which Gemini 3 answers 400.
- A tool result is a ``functionResponse`` (``{"result": ...}``, ``{"error": ...}`` for a
  failed tool) naming its call. Its images and files go in the response's own ``parts`` for
  Gemini 3 and later (multimodal function responses, which Gemini 3 reads as the tool's
  output); for earlier models, which have no such field, they follow as ``inlineData`` /
  ``fileData`` parts in the same user content.
- Tools are ``functionDeclarations`` with their schemas converted to the subset Gemini takes
  (:mod:`rxreact.model.gemini._schema`); ``tool_choice`` is ``toolConfig``'s
  ``functionCallingConfig.mode`` (``none`` → ``NONE``, ``required`` → ``ANY``).
- Options: the chat-style names go into ``generationConfig`` (``max_tokens`` →
  ``maxOutputTokens``, ``stop`` → ``stopSequences``, ``top_p`` → ``topP``...), as do its own
  names; a ``response_format`` becomes ``responseMimeType: application/json`` (with
  ``responseJsonSchema`` for a schema); ``thinking`` is ``thinkingConfig``; any other key is
  a top-level body field (``safetySettings``, ``cachedContent``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ContentPart,
    File,
    Image,
    Message,
    SystemMessage,
    Text,
    ToolMessage,
    ToolSpec,
    UserMessage,
    content_text,
)
from rxreact.model.gemini._schema import gemini_schema

__all__ = ["PROVIDER", "SKIP_SIGNATURE", "encode_request", "nests_media"]

PROVIDER = "gemini"
"""The tag of the replay items this wire format makes and takes back."""
SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented placeholder for a signature a call from another model cannot have."""

_VERSION = re.compile(r"gemini-(\d+)")
_MODES = {"auto": "AUTO", "none": "NONE", "required": "ANY"}
_CHAT_NAMES = {
    "temperature": "temperature",
    "top_p": "topP",
    "top_k": "topK",
    "max_tokens": "maxOutputTokens",
    "max_completion_tokens": "maxOutputTokens",
    "stop": "stopSequences",
    "seed": "seed",
    "presence_penalty": "presencePenalty",
    "frequency_penalty": "frequencyPenalty",
    "n": "candidateCount",
}
_GENERATION = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "maxOutputTokens",
        "stopSequences",
        "seed",
        "presencePenalty",
        "frequencyPenalty",
        "candidateCount",
        "responseMimeType",
        "responseJsonSchema",
        "responseSchema",
        "responseModalities",
        "thinkingConfig",
        "responseLogprobs",
        "logprobs",
        "mediaResolution",
    }
)


def encode_request(
    request: ChatRequest,
    *,
    thinking: Mapping[str, Any] | None = None,
    default_options: Mapping[str, Any] | None = None,
    model: str = "",
) -> dict[str, Any]:
    """The JSON body of a ``generateContent`` / ``streamGenerateContent`` request (rules: the
    module doc; the model is in the URL, not the body: ``model`` only decides where a tool
    result's media go).

    Raises:
        InvalidArgumentError: a tool schema Gemini cannot take (naming the tool).
    """
    messages = list(request.messages)
    leading: list[str] = []
    while messages and isinstance(first := messages[0], SystemMessage):
        leading.append(first.content)
        messages.pop(0)
    body: dict[str, Any] = {}
    if leading:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(leading)}]}
    body["contents"] = _contents(messages, nests_media(model))
    if request.tools:
        body["tools"] = [{"functionDeclarations": [_declaration(t) for t in request.tools]}]
        if request.tool_choice is not None:
            mode = _MODES[request.tool_choice]
            body["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    generation: dict[str, Any] = {}
    if thinking is not None:
        generation["thinkingConfig"] = dict(thinking)
    for options in (default_options, request.options):
        for key, value in (options or {}).items():
            _option(body, generation, key, value)
    if generation:
        body["generationConfig"] = generation
    if not request.tools:
        body.pop("toolConfig", None)  # Gemini refuses a calling mode without declarations
    return body


def _declaration(tool: ToolSpec) -> dict[str, Any]:
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = gemini_schema(tool.parameters, tool.name)
    if parameters.get("properties"):  # a tool without arguments declares none
        declaration["parameters"] = parameters
    return declaration


def _option(body: dict[str, Any], generation: dict[str, Any], key: str, value: Any) -> None:
    if key == "response_format":
        generation.update(_response_format(value))
    elif key == "generationConfig" and isinstance(value, Mapping):
        generation.update(value)
    elif key in _CHAT_NAMES:
        name = _CHAT_NAMES[key]
        generation[name] = [value] if name == "stopSequences" and isinstance(value, str) else value
    elif key in _GENERATION:
        generation[key] = value
    else:
        body[key] = value


def _response_format(response_format: Any) -> dict[str, Any]:
    """Chat completions' ``response_format`` as Gemini's structured output."""
    if not isinstance(response_format, Mapping) or response_format.get("type") == "text":
        return {}
    out: dict[str, Any] = {"responseMimeType": "application/json"}
    schema = (response_format.get("json_schema") or {}).get("schema")
    if schema is not None:
        out["responseJsonSchema"] = schema
    return out


def nests_media(model: str) -> bool:
    """Whether ``model`` takes a tool result's media inside its ``functionResponse`` (Gemini 3
    and later; a name without a version, a tuned model's, keeps them beside it)."""
    version = _VERSION.search(model)
    return version is not None and int(version.group(1)) >= 3


def _contents(messages: list[Message], nested_media: bool) -> list[dict[str, Any]]:
    turn_start = _turn_start(messages)
    calls: dict[str, tuple[str, str | None]] = {}  # call id -> (name, Gemini's own id)
    contents: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if isinstance(message, AssistantMessage):
            role, parts = "model", _model_parts(message, i > turn_start, calls)
        elif isinstance(message, ToolMessage):
            role, parts = "user", _tool_parts(message, calls, nested_media)
        elif isinstance(message, UserMessage):
            content = message.content
            role = "user"
            parts = [{"text": content}] if isinstance(content, str) else _parts(content)
        else:
            role, parts = "user", [{"text": message.content}]
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)  # roles alternate: one content per run
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _turn_start(messages: list[Message]) -> int:
    """Where the current turn starts: the last user message, except one that follows tool
    results (the forced round's instruction shares their content, which Gemini may or may not
    read as a new turn; the placeholder is sent either way)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], UserMessage) and not (
            i and isinstance(messages[i - 1], ToolMessage)
        ):
            return i
    return -1


def _model_parts(
    message: AssistantMessage, current: bool, calls: dict[str, tuple[str, str | None]]
) -> list[dict[str, Any]]:
    own = [item.data for item in message.replay if item.provider == PROVIDER]
    text_signatures = [d["thoughtSignature"] for d in own if d.get("type") == "text"]
    by_position = {d["position"]: d for d in own if d.get("type") == "function_call"}
    parts: list[dict[str, Any]] = []
    if message.content or text_signatures:
        text: dict[str, Any] = {"text": message.content or ""}
        if text_signatures:
            text["thoughtSignature"] = text_signatures[-1]
        parts.append(text)
    for position, call in enumerate(message.tool_calls):
        meta = by_position.get(position)
        own_id = meta.get("id") if meta is not None and meta.get("name") == call.name else None
        function: dict[str, Any] = {"name": call.name, "args": _args(call.arguments)}
        if own_id:
            function["id"] = own_id
        part: dict[str, Any] = {"functionCall": function}
        signature = None if meta is None else meta.get("thoughtSignature")
        if signature is None and position == 0 and current:
            signature = SKIP_SIGNATURE
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
        calls[call.id] = (call.name, own_id)
    return parts


def _args(arguments: str) -> dict[str, Any]:
    """A call's arguments as the object Gemini sends back; a call the model wrote as invalid
    JSON (its result said so) goes back as an empty object, which is all it could mean."""
    try:
        parsed = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {"value": parsed}


def _tool_parts(
    message: ToolMessage, calls: dict[str, tuple[str, str | None]], nested_media: bool
) -> list[dict[str, Any]]:
    name, own_id = calls.get(message.tool_call_id, (message.name or "", None))
    text = content_text(message.content)
    function: dict[str, Any] = {
        "name": name,
        "response": {"error": text} if message.is_error else {"result": text},
    }
    if own_id:
        function["id"] = own_id
    content = () if isinstance(message.content, str) else message.content
    media = _parts(tuple(p for p in content if not isinstance(p, Text)))
    if nested_media and media:
        function["parts"] = media
        return [{"functionResponse": function}]
    return [{"functionResponse": function}, *media]


def _parts(parts: tuple[ContentPart, ...]) -> list[dict[str, Any]]:
    return [_part(part) for part in parts]


def _part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    assert isinstance(part, Image | File)
    if part.data_base64 is not None:
        return {"inlineData": {"mimeType": part.media_type, "data": part.data_base64}}
    url = part.url or ""
    if url.startswith("data:"):
        head, _, data = url.removeprefix("data:").partition(",")
        return {"inlineData": {"mimeType": head.partition(";")[0], "data": data}}
    file: dict[str, Any] = {"fileUri": url}
    if part.media_type:
        file["mimeType"] = part.media_type
    return {"fileData": file}
