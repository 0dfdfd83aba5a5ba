"""What the model reads for an MCP tool result (``rxreact.mcp._content``), on plain objects
shaped like the SDK's blocks (the SDK itself is exercised in ``test_mcp``)."""

from __future__ import annotations

import base64
from types import SimpleNamespace
from typing import Any

from rxreact import Image, Text
from rxreact.mcp._content import result_content
from rxreact.messages import MAX_PART_BYTES


def result(*blocks: Any) -> Any:
    return SimpleNamespace(content=list(blocks), structured_content=None)


def text(value: str) -> Any:
    return SimpleNamespace(type="text", text=value)


def image(data: str, mime_type: str = "image/png") -> Any:
    return SimpleNamespace(type="image", data=data, mime_type=mime_type)


def test_text_only_results_stay_text() -> None:
    assert result_content(result(text("a"), text("b"))) == "a\nb"


def test_an_image_block_becomes_an_image_the_rest_text() -> None:
    data = base64.b64encode(b"\x89PNG").decode()
    audio = SimpleNamespace(type="audio", data=data, mime_type="audio/wav")
    assert result_content(result(text("a chart"), image(data), audio)) == (
        Text(text="a chart"),
        Image.from_bytes(b"\x89PNG", "image/png"),
        Text(text="[audio: audio/wav, 4 bytes]"),
    )


def test_an_image_that_cannot_be_carried_is_described() -> None:
    huge = base64.b64encode(bytes(MAX_PART_BYTES + 1)).decode()
    assert result_content(result(image("not base64!"), image(huge))) == (
        "[image: image/png, 11 bytes]\n[image: image/png, 20971521 bytes]"
    )
