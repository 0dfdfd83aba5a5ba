"""Argument checks that fail at construction with a message naming the parameter.

A wrong setting found when the first run starts (or deep inside pydantic) is found late and
explained badly; these raise :class:`~rxreact.errors.InvalidArgumentError` at once.
"""

from __future__ import annotations

from typing import Any

from rxreact.errors import InvalidArgumentError

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


def check_question(value: Any) -> str:
    """``value`` if it is a ``str``: a run's question."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"question must be a str, got {described(value)}")
    return value
