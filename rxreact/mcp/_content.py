"""What the model reads for an MCP tool result: text as it is, images as :class:`~rxreact.Image`
parts, anything else described."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ContentPart, Image, Text

__all__ = ["result_content", "result_text"]


def result_content(result: Any) -> str | tuple[ContentPart, ...]:
    """A ``CallToolResult`` as the model reads it: :func:`result_text`, or parts when it holds
    an image (the image as an :class:`~rxreact.Image`, every other block as text).

    An image whose data is not base64 or is larger than
    :data:`~rxreact.messages.MAX_PART_BYTES` is described in words instead.
    """
    images = [_image(block) for block in result.content]
    if not any(images):
        return result_text(result)
    return tuple(
        image if image is not None else Text(text=_block_text(block))
        for block, image in zip(result.content, images, strict=True)
    )


def _image(block: Any) -> Image | None:
    if getattr(block, "type", None) != "image":
        return None
    try:
        data = base64.b64decode(block.data, validate=True)
        return Image.from_bytes(data, str(block.mime_type))
    except (binascii.Error, ValueError, InvalidArgumentError):
        return None


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
