"""A run's error as JSON and back: followers in other processes get the same exception type.

Only the type name, the message and the simple attributes (``status_code``, ``retry_after``,
``phase`` ...) travel; the traceback and chained causes stay in the owning process. A type
that is not one of rxreact's errors arrives as :class:`~rxreact.AgentError` naming it.
"""

from __future__ import annotations

import json
from typing import Any

from rxreact import errors

__all__ = ["decode_error", "encode_error"]

_SIMPLE = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    if isinstance(value, _SIMPLE):
        return True
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def encode_error(error: BaseException) -> dict[str, Any]:
    """``{"type", "message", "attrs"}`` of ``error``, all JSON-safe."""
    attrs = {k: v for k, v in vars(error).items() if not k.startswith("_") and _plain(v)}
    return {"type": type(error).__name__, "message": str(error), "attrs": attrs}


def decode_error(data: dict[str, Any]) -> Exception:
    """The exception :func:`encode_error` described, rebuilt without calling its ``__init__``."""
    name, message = str(data.get("type", "")), str(data.get("message", ""))
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.RxReactError)):
        return errors.AgentError(f"{name}: {message}")
    # Subclasses take different constructor arguments (status_code, phase, ...); the message and
    # the attributes are restored as they were instead.
    error: Exception = cls.__new__(cls)
    Exception.__init__(error, message)
    attrs = data.get("attrs")
    if isinstance(attrs, dict):  # only what encode_error writes: never private state
        error.__dict__.update(
            (k, v) for k, v in attrs.items() if isinstance(k, str) and not k.startswith("_")
        )
    return error
