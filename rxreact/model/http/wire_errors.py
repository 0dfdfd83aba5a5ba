"""Provider JSON that reports an error, or JSON of the wrong shape, as :mod:`rxreact.errors`.

Every wire format's parser maps through these, so a provider's error reads the same whichever
API carried it: :class:`~rxreact.errors.ProviderStreamError` with the provider's own message,
``code``, ``error_type`` and payload; :class:`~rxreact.errors.StreamProtocolError` quoting a
short excerpt of data that is not what the format allows.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json

from rxreact.errors import ProviderStreamError, StreamProtocolError
from rxreact.messages import Usage

__all__ = ["EXCERPT", "error_event", "excerpt", "parse_usage", "protocol_error", "provider_error"]

EXCERPT = 200
"""Characters of offending data quoted in a StreamProtocolError."""


def parse_usage(usage: Any) -> Usage:
    """A provider's usage object as :class:`Usage` (extras kept); ``ValueError`` if invalid."""
    try:
        return Usage.model_validate(usage)
    except ValidationError as exc:
        # ValidationError is a ValueError: the callers map it to StreamProtocolError.
        raise ValueError(f"invalid usage: {exc.error_count()} error(s)") from exc


def error_event(data: str | bytes) -> ProviderStreamError:
    """The error of an ``event: error`` SSE event, whatever its data looks like."""
    try:
        obj = from_json(data)
    except ValueError:
        obj = None
    if type(obj) is dict:
        return provider_error(obj.get("error") or obj, obj.get("usage"))
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return ProviderStreamError(text.strip() or "error event without a message")


def provider_error(error: Any, usage: Any = None) -> ProviderStreamError:
    """Map a provider's ``error`` value (usually an object, sometimes a bare string), with the
    usage sent beside it (kept when it is a valid usage object: the error is what matters)."""
    try:
        billed = None if usage is None else parse_usage(usage)
    except ValueError:
        billed = None
    if type(error) is not dict:
        return ProviderStreamError(str(error), payload={"error": error}, usage=billed)
    message = error.get("message")
    error_type = error.get("type")
    return ProviderStreamError(
        message if type(message) is str and message else excerpt(json.dumps(error)),
        code=error.get("code"),
        error_type=error_type if type(error_type) is str else None,
        payload=error,
        usage=billed,
    )


def protocol_error(reason: str, data: str | bytes | dict[str, Any]) -> StreamProtocolError:
    """``reason``, quoting a short excerpt of the offending ``data``."""
    if isinstance(data, dict):
        text = json.dumps(data, default=repr)
    elif isinstance(data, bytes):
        # Decode only what is quoted: the body may be megabytes of HTML.
        text = data[: EXCERPT * 4].decode("utf-8", "replace")
    else:
        text = data
    return StreamProtocolError(f"{reason}: {excerpt(text)!r}")


def excerpt(text: str) -> str:
    """``text`` cut to :data:`EXCERPT` characters."""
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"
