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
an awaitable (a coroutine returned by a     awaited on rxreact's async-tools loop, then
sync function, say)                         these rules apply to what it returns
a generator or async generator             an error result (return a list instead)
anything else JSON cannot express           an error result naming the type
==========================================  ==============================================

Text longer than the tool's ``max_result_chars`` (default :data:`DEFAULT_MAX_RESULT_CHARS`)
is cut there and ends with a visible marker saying how long it was, so the model knows it
read a part.
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError, to_json

__all__ = ["DEFAULT_MAX_RESULT_CHARS", "ToolResultError", "result_text", "truncate_result"]

DEFAULT_MAX_RESULT_CHARS = 100_000
"""The longest tool result sent to the model, in characters (~25k tokens)."""


class ToolResultError(Exception):
    """A tool returned a value the model cannot be given; the message is written for it.

    Internal to a run: it becomes an error ``tool_result``, never an ``on_error``.
    """


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
