"""Argument checks that fail at construction with a message naming the parameter.

A wrong setting found when the first run starts (or deep inside pydantic) is found late and
explained badly; these raise :class:`~rxreact.errors.InvalidArgumentError` at once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ContentPart, File, Image, Text

__all__ = [
    "MAX_CONVERSATION_ID",
    "check_bool",
    "check_conversation_id",
    "check_instance",
    "check_int",
    "check_optional_int",
    "check_optional_seconds",
    "check_optional_str",
    "check_options",
    "check_question",
    "check_run",
    "described",
]


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


MAX_CONVERSATION_ID = 200
"""The longest conversation id, in characters."""

# C0 and C1 control characters (newlines and tabs included) and lone surrogates, which no
# store can keep as text. Everything else is allowed, ``/``, spaces and any script included.
_NOT_IN_AN_ID = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def check_conversation_id(value: Any) -> str:
    """``value`` if it is a usable conversation id: a ``str`` of 1 to
    :data:`MAX_CONVERSATION_ID` characters, none of them a control character (U+0000-U+001F,
    U+007F-U+009F) or a lone surrogate. The one rule of the Python API and of ``rxreact serve``.
    """
    if not isinstance(value, str):
        raise InvalidArgumentError(f"conversation_id must be a str, got {described(value)}")
    if not value:
        raise InvalidArgumentError("conversation_id must not be empty")
    if len(value) > MAX_CONVERSATION_ID:
        raise InvalidArgumentError(
            f"conversation_id must be at most {MAX_CONVERSATION_ID} characters, got {len(value)}"
        )
    bad = _NOT_IN_AN_ID.search(value)
    if bad is not None:
        raise InvalidArgumentError(
            f"conversation_id must not contain control characters, got {bad.group()!r} at "
            f"position {bad.start()}"
        )
    return value


def check_options(name: str, value: Any) -> dict[str, Any]:
    """``value`` as a dict if it is ``None`` or a mapping with ``str`` keys (request options)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{name} must be a dict or None, got {described(value)}")
    for key in value:
        if not isinstance(key, str):
            raise InvalidArgumentError(f"{name} keys must be str, got {described(key)}")
    return dict(value)


def check_run(question: Any, conversation_id: Any, options: Any) -> str | tuple[ContentPart, ...]:
    """The arguments every way of running an agent takes, checked where they are given (a run
    that fails on them later would have taken the conversation's lease first); returns the
    question as :func:`check_question` gives it."""
    checked = check_question(question)
    if conversation_id is not None:
        check_conversation_id(conversation_id)
    check_options("options", options)
    return checked


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a ``bool``."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be True or False, got {described(value)}")
    return value


def check_optional_str(name: str, value: Any) -> str | None:
    """``value`` if it is ``None`` or a ``str``."""
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentError(f"{name} must be a str or None, got {described(value)}")
    return value


def check_optional_int(name: str, value: Any, minimum: int) -> int | None:
    """``value`` if it is ``None`` or an ``int`` (not a bool) of at least ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(
            f"{name} must be an int >= {minimum} or None, got {described(value)}"
        )
    if value < minimum:
        raise InvalidArgumentError(f"{name} must be >= {minimum} (or None), got {value}")
    return value


def check_instance(name: str, value: Any, kind: str) -> None:
    """Refuse a class given where an instance of it is expected (``ReactAgent(OpenAIChatModel)``):
    a class has the methods its instances have, so a protocol check lets it through."""
    if isinstance(value, type):
        raise InvalidArgumentError(
            f"{name} must be {kind}, got the class {value.__name__}: write {value.__name__}(...)"
        )
