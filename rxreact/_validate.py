"""Argument checks that fail at construction with a message naming the parameter.

A wrong setting found when the first run starts (or deep inside pydantic) is found late and
explained badly; these raise :class:`~rxreact.errors.InvalidArgumentError` at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ContentPart, File, Image, Text

__all__ = ["check_int", "check_optional_seconds", "check_question", "described"]


def described(value: Any) -> str:
    """``value`` for a message: its repr and, when that does not say it, its type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return text if value is None else f"{text} ({type(value).__name__})"


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` if it is an ``int`` (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an int >= {minimum}, got {described(value)}")
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be >= {minimum}, got {value}")
    return value


def check_optional_seconds(name: str, value: Any) -> float | None:
    """``value`` if it is ``None`` or a positive number of seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(
            f"{name} must be a number of seconds or None, got {described(value)}"
        )
    if not value > 0:  # also refuses NaN
        raise InvalidArgumentError(f"{name} must be > 0 seconds (or None: no limit), got {value}")
    return float(value)


def check_question(value: Any) -> str | tuple[ContentPart, ...]:
    """A run's question as a user message's content: a ``str`` as is; a sequence of
    ``str | Text | Image | File`` (or one part alone) as a tuple of parts, each ``str`` a
    :class:`~rxreact.Text`.

    Raises:
        InvalidArgumentError: anything else, an empty sequence, or an item that is not one of
            these (the message names its position).
    """
    if isinstance(value, str):
        return value
    if isinstance(value, Text | Image | File):
        return (value,)
    if isinstance(value, bytes | bytearray | memoryview) or not isinstance(value, Sequence):
        raise InvalidArgumentError(
            "question must be a str or a sequence of str, Text, Image and File, got "
            f"{described(value)}"
        )
    if not value:
        raise InvalidArgumentError("question is an empty sequence: give a str or some parts")
    parts: list[ContentPart] = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            parts.append(Text(text=item))
        elif isinstance(item, Text | Image | File):
            parts.append(item)
        else:
            raise InvalidArgumentError(
                f"question[{i}] must be a str, Text, Image or File, got {described(item)}"
                + (
                    ": read a file with Image.from_path or File.from_path"
                    if _pathlike(item)
                    else ""
                )
            )
    return tuple(parts)


def _pathlike(value: Any) -> bool:
    return isinstance(value, os.PathLike)
