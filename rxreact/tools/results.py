"""What the model reads for a tool's return value: the conversion rules, in one place.

==========================================  ==============================================
a tool returns                              the model reads
==========================================  ==============================================
``str``                                     the string, as is
``None`` (or an Observable that completes   ``null`` (JSON for "nothing"; an empty tool
empty)                                      message is rejected by some APIs)
a pydantic model                            its JSON (``model_dump_json``)
``dict``, ``list``, ``tuple``, numbers,     JSON (pydantic's serializer: dataclasses,
``bool``, dataclasses, datetimes...         datetimes, UUIDs, enums, models inside)
``bytes`` / ``bytearray`` / ``memoryview``  the bytes decoded as UTF-8; not UTF-8: an error
                                            result
an :class:`~rxreact.Image` (or a ``File``)  the image itself, where the API takes images
                                            in a tool result; else the tool message says
                                            so and the image follows in a user message
a list of ``str`` / ``Text`` / ``Image`` /  the same parts in order (each ``str`` a text
``File`` holding at least one part object   part); without an image or a file, their text
                                            joined by newlines. A list of ``str`` alone is
                                            JSON, as before. A lone ``Text``: its text
an awaitable (a coroutine returned by a     awaited on rxreact's async-tools loop, then
sync function, say)                         these rules apply to what it returns
a generator or async generator             an error result (return a list instead)
anything else JSON cannot express           an error result naming the type
==========================================  ==============================================

Text longer than the tool's ``max_result_chars`` (default :data:`DEFAULT_MAX_RESULT_CHARS`)
is cut there and ends with a visible marker saying how long it was, so the model knows it
read a part. In a result made of parts the text parts share that limit; images and files are
kept whole (each is at most :data:`~rxreact.messages.MAX_PART_BYTES`).
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

from rxreact.messages import ContentPart, File, Image, Text

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "ToolResultError",
    "result_content",
    "result_text",
    "truncate_result",
]

DEFAULT_MAX_RESULT_CHARS = 100_000
"""The longest tool result sent to the model, in characters (~25k tokens)."""


class ToolResultError(Exception):
    """A tool returned a value the model cannot be given; the message is written for it.

    Internal to a run: it becomes an error ``tool_result``, never an ``on_error``.
    """


def result_content(
    value: Any, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS
) -> str | tuple[ContentPart, ...]:
    """What the model reads for ``value``: parts for an image, a file or a list holding
    them (text parts cut to ``max_chars`` together), else :func:`result_text`.

    Raises:
        ToolResultError: as :func:`result_text`.
    """
    parts = _parts(value)
    if parts is None:
        return result_text(value, max_chars)
    if not any(isinstance(part, Image | File) for part in parts):
        return truncate_result(
            "\n".join(part.text for part in parts if isinstance(part, Text)), max_chars
        )
    return _cut_parts(parts, max_chars)


def _parts(value: Any) -> tuple[ContentPart, ...] | None:
    """``value`` as parts when it is one, or a list of ``str`` and parts with at least one
    part object; ``None`` when the other rules apply."""
    if isinstance(value, Text | Image | File):
        return (value,)
    if not isinstance(value, list | tuple) or not value:
        return None
    if not any(isinstance(item, Text | Image | File) for item in value):
        return None  # a list of strings (or data) stays JSON
    parts: list[ContentPart] = []
    for item in value:
        if isinstance(item, str):
            parts.append(Text(text=item))
        elif isinstance(item, Text | Image | File):
            parts.append(item)
        else:
            raise ToolResultError(
                f"returned a list mixing parts with a {type(item).__name__}; a list with "
                "images may hold only str, Text, Image and File"
            )
    return tuple(parts)


def _cut_parts(parts: tuple[ContentPart, ...], max_chars: int | None) -> tuple[ContentPart, ...]:
    """The text parts cut so that together they hold at most ``max_chars`` characters: the
    part that crosses the limit is cut with the marker, text parts after it are dropped.
    Images and files are kept."""
    if max_chars is None:
        return parts
    left, cut = max_chars, False
    kept: list[ContentPart] = []
    for part in parts:
        if not isinstance(part, Text):
            kept.append(part)
        elif len(part.text) <= left:
            kept.append(part)
            left -= len(part.text)
        elif not cut:
            kept.append(Text(text=truncate_result(part.text, left)))
            left, cut = 0, True
    return tuple(kept)


def result_text(value: Any, max_chars: int | None = DEFAULT_MAX_RESULT_CHARS) -> str:
    """The text the model reads for ``value`` (rules: the module docstring).

    Raises:
        ToolResultError: a generator, non-UTF-8 bytes, or a value JSON cannot express.
    """
    if isinstance(value, str):
        text = value
    elif value is None:
        text = "null"
    elif isinstance(value, BaseModel):
        text = value.model_dump_json()
    elif isinstance(value, bytes | bytearray | memoryview):
        try:
            text = bytes(value).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ToolResultError(
                f"returned {len(value)} bytes that are not UTF-8 text ({error.reason} at "
                f"byte {error.start}); a tool must return text or JSON data"
            ) from None
    elif inspect.isgenerator(value) or inspect.isasyncgen(value):
        if inspect.isgenerator(value):
            value.close()  # not run, and no "never iterated" noise from it later
        raise ToolResultError("returned a generator; a tool must return a value (e.g. a list)")
    else:
        try:
            text = to_json(value).decode()
        except (PydanticSerializationError, ValueError, RecursionError) as error:
            raise ToolResultError(
                f"returned a {type(value).__name__} that cannot be sent as JSON: {error}"
            ) from None
    return truncate_result(text, max_chars)


def truncate_result(text: str, max_chars: int | None) -> str:
    """``text`` cut to ``max_chars`` characters, with a marker saying so (``None``: no cut)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    return (
        text[:max_chars]
        + f"\n[truncated: the result was {len(text)} characters; the first {max_chars} are shown]"
    )
