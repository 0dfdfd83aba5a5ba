"""Pieces of a request body that more than one wire format builds the same way: a tool call's
arguments as an object, an image or file as its media type and base64 data, and a JSON schema
with every object closed (the structured outputs of Anthropic and Bedrock require it)."""

from __future__ import annotations

import copy
import json
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import File, Image

__all__ = ["arguments_object", "closed_schema", "inline_data"]


def arguments_object(arguments: str) -> Any:
    """The arguments as the object an API wants: ``""`` is ``{}``; JSON that is not an object
    (the model's mistake, answered by an error result) is sent as ``{}`` too."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def inline_data(part: Image | File, provider: str) -> tuple[str, str]:
    """``(media type, base64 data)`` of a part given as bytes or as a ``data:`` URL.

    Raises:
        InvalidArgumentError: a ``data:`` URL that is not base64 (``provider`` names who
            refuses it).
    """
    if part.data_base64 is not None:
        return part.media_type or "", part.data_base64
    url = part.url or ""
    head, _, data = url.partition(",")
    if not head.endswith(";base64"):
        raise InvalidArgumentError(f"{provider} takes data: URLs only base64-encoded")
    return head[len("data:") : -len(";base64")], data


def closed_schema(schema: Any) -> Any:
    """A copy of ``schema`` with every object closed (``additionalProperties: false``)."""

    def close(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                close(value)
        elif isinstance(node, list):
            for value in node:
                close(value)

    closed = copy.deepcopy(schema)
    close(closed)
    return closed
