"""The request rules of the real chat-completions API that the mock server enforces (HTTP 400):
the tool-call history, and content parts (images and files)."""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = ["content_error", "history_error"]

_USER_PARTS = ("text", "image_url", "input_audio", "file")
_IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def history_error(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives for this body's tools and history, if any."""
    if body.get("tool_choice") is not None and not body.get("tools"):
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified."
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': expected a non-empty array of messages."
    pending: list[str] = []  # ids of the last assistant tool calls not answered yet
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (no open call has id {call_id!r})."
                )
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending)
        if role == "assistant":
            pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
    return _unanswered(pending) if pending else None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(ids)
    )


def content_error(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives for the body's content parts, if any: images and
    files only from the user, known part types, well-formed image URLs and file data."""
    for i, message in enumerate(body.get("messages") or ()):
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        role = message.get("role")
        for j, part in enumerate(message["content"]):
            kind = part.get("type") if isinstance(part, dict) else None
            where = f"messages[{i}].content[{j}]"
            if role != "user" and kind in ("image_url", "file"):
                return (
                    f"Invalid 'messages[{i}]'. Image URLs are only allowed for messages with "
                    f"role 'user', but this message with role '{role}' contains an image URL."
                    if kind == "image_url"
                    else f"Invalid '{where}': files are only allowed for messages with role "
                    f"'user', but this message with role '{role}' contains a file."
                )
            if role == "user" and kind not in _USER_PARTS:
                return (
                    f"Invalid value: {kind!r}. Supported values are: 'text', 'image_url', "
                    "'input_audio', and 'file'."
                )
            problem = _part_error(kind, part, where)
            if problem is not None:
                return problem
    return None


def _part_error(kind: Any, part: dict[str, Any], where: str) -> str | None:
    if kind == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else None
        if not isinstance(url, str) or not url.startswith(("https://", "http://", "data:")):
            return (
                f"Invalid '{where}.image_url.url'. Expected a valid URL, but got a value with "
                "an invalid format."
            )
        if url.startswith("data:") and not _is_data_url(url, _IMAGE_TYPES):
            return (
                "You uploaded an unsupported image. Please make sure your image has of one the "
                "following formats: ['png', 'jpeg', 'gif', 'webp']."
            )
    if kind == "file":
        file = part.get("file")
        if not isinstance(file, dict) or not (file.get("file_data") or file.get("file_id")):
            return (
                f"Missing required parameter: '{where}.file.file_data' or '{where}.file.file_id'."
            )
        data = file.get("file_data")
        if data is not None and not (isinstance(data, str) and _is_data_url(data, None)):
            return f"Invalid '{where}.file.file_data': expected a base64 data URL."
        if data is not None and not file.get("filename"):
            return f"Missing required parameter: '{where}.file.filename'."
    return None


def _is_data_url(url: str, media_types: tuple[str, ...] | None) -> bool:
    """``data:<type>;base64,<data>`` with valid base64 (and a type of ``media_types``)."""
    head, _, data = url.removeprefix("data:").partition(",")
    media_type, _, encoding = head.partition(";")
    if encoding != "base64" or (media_types is not None and media_type not in media_types):
        return False
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return bool(data)
