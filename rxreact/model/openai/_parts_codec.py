"""Message parts (:class:`~rxreact.Text`, :class:`~rxreact.Image`, :class:`~rxreact.File`) to and
from chat-completions content parts.

===============================  ==========================================================
ours                             chat completions
===============================  ==========================================================
``Text``                         ``{"type": "text", "text": ...}``
``Image`` by URL                 ``{"type": "image_url", "image_url": {"url": url}}``
``Image`` as bytes               the same, with a ``data:image/png;base64,...`` URL
``File`` as bytes                ``{"type": "file", "file": {"filename", "file_data"}}``,
                                 ``file_data`` a ``data:`` URL
``File`` by ``https://`` URL     not sendable: the API takes a file's bytes or an uploaded
                                 file's id, never a link (:class:`InvalidArgumentError`)
===============================  ==========================================================
"""

from __future__ import annotations

import mimetypes
from collections.abc import Mapping
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ContentPart, File, Image, Text
from rxreact.messages._labels import part_label

__all__ = ["decode_content", "encode_content"]


def encode_content(content: str | tuple[ContentPart, ...]) -> str | list[dict[str, Any]]:
    """A user message's content as chat completions takes it: a string, or a list of parts.

    Raises:
        InvalidArgumentError: a part the API cannot take (a file given by URL), named.
    """
    if isinstance(content, str):
        return content
    return [_encode_part(part) for part in content]


def _encode_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": part.url or _data_url(part)}}
    if part.url is not None and not part.url.startswith("data:"):
        raise InvalidArgumentError(
            f"{part_label(part)}: a chat-completions model cannot take a file by URL, only its "
            "bytes: read it with File.from_path or File.from_bytes"
        )
    return {
        "type": "file",
        "file": {"filename": _filename(part), "file_data": part.url or _data_url(part)},
    }


def _data_url(part: Image | File) -> str:
    return f"data:{part.media_type};base64,{part.data_base64}"


def _filename(part: File) -> str:
    """The file's name, else ``document`` with the extension of its media type (the API
    requires a name with ``file_data``)."""
    if part.name:
        return part.name
    media_type = part.media_type or (part.url or "").removeprefix("data:").split(";", 1)[0]
    return "document" + (mimetypes.guess_extension(media_type) or "")


def decode_content(content: Any) -> str | tuple[ContentPart, ...] | None:
    """Content as a client sent it: a string as is; a list of parts as our parts, or as one
    string when every part is text (joined, as before parts existed); ``None`` as is.

    Parts with no counterpart (``input_audio``, a ``file_id``) become a text label.
    """
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        return str(content)
    parts = tuple(_decode_part(p) for p in content)
    if all(isinstance(p, Text) for p in parts):
        return "".join(p.text for p in parts if isinstance(p, Text))
    return parts


def _decode_part(raw: Any) -> ContentPart:
    if not isinstance(raw, Mapping):
        return Text(text=str(raw))
    kind = raw.get("type")
    if kind == "image_url":
        image = raw.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        data = _parse_data_url(str(url or ""))
        if data is not None:
            return Image(media_type=data[0], data_base64=data[1])
        return Image(url=str(url or ""))
    if kind == "file":
        file = raw.get("file")
        if not isinstance(file, Mapping):
            file = {}
        name = file.get("filename")
        data = _parse_data_url(str(file.get("file_data") or ""))
        if data is not None:
            return File(media_type=data[0], data_base64=data[1], name=name)
        return Text(text=f"[file {file.get('file_id') or name or ''}]")
    if kind == "text" or "text" in raw:
        return Text(text=str(raw.get("text") or ""))
    return Text(text=f"[{kind} content]")


def _parse_data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of a ``data:<type>;base64,<data>`` URL, else ``None``."""
    if not url.startswith("data:"):
        return None
    head, _, data = url[5:].partition(",")
    media_type, _, encoding = head.partition(";")
    if encoding != "base64" or not media_type or not data:
        return None
    return media_type, data
