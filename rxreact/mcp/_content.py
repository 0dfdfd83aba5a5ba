"""What the model reads for an MCP tool result: text as it is, anything else described."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

__all__ = ["result_text"]


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult``: its text blocks, other blocks described in words.

    A result with no content but ``structuredContent`` is that value as JSON.
    """
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, default=str)
    return "\n".join(parts)


def _block_text(block: Any) -> str:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind}: {block.mime_type}, {_decoded_size(block.data)} bytes]"
    if kind == "resource_link":
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]"
    if kind == "resource":
        contents = block.resource
        text = getattr(contents, "text", None)
        if text is not None:
            return f"[resource <{contents.uri}>]\n{text}"
        mime = f", {contents.mime_type}" if contents.mime_type else ""
        return f"[resource <{contents.uri}>{mime}, {_decoded_size(contents.blob)} bytes]"
    return f"[{kind or type(block).__name__} content]"


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)
