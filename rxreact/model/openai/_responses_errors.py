"""A Responses API error object as a :class:`~rxreact.errors.ProviderStreamError`
(:func:`stream_error`), and the API's usage under rxreact's names (:func:`responses_usage`),
for :mod:`rxreact.model.openai.responses_wire` (the rules are in its docstring)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from rxreact.errors import ProviderStreamError
from rxreact.messages import Usage

__all__ = ["responses_usage", "stream_error"]

_RETRYABLE = frozenset(
    {
        "server_error",
        "server_is_overloaded",
        "service_unavailable_error",
        "rate_limit_exceeded",
        "internal_error",
        "overloaded_error",
    }
)
"""Error codes and types that say the service failed or was busy, not the request."""

_USAGE_NAMES = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "input_tokens_details": "prompt_tokens_details",
    "output_tokens_details": "completion_tokens_details",
}


def responses_usage(raw: Any) -> Usage:
    """The Responses API's usage object under rxreact's names (see the module doc)."""
    if type(raw) is not dict:
        raise TypeError(f"usage of type {type(raw).__name__}")
    fields = {_USAGE_NAMES.get(key, key): value for key, value in raw.items() if value is not None}
    try:
        return Usage.model_validate(fields)
    except ValidationError as exc:
        raise ValueError(f"invalid usage: {exc.error_count()} error(s)") from exc


def stream_error(error: dict[str, Any], response: dict[str, Any]) -> ProviderStreamError:
    """A ``ProviderStreamError`` from an error object (``error`` event, ``response.error``)."""
    payload = {k: v for k, v in error.items() if k not in ("type", "sequence_number")} | (
        {"type": error["type"]} if error.get("type") not in (None, "error") else {}
    )
    message = error.get("message")
    code, kind = error.get("code"), payload.get("type")
    usage = response.get("usage")
    try:
        billed = None if usage is None else responses_usage(usage)
    except (TypeError, ValueError):
        billed = None
    exc = ProviderStreamError(
        message if isinstance(message, str) and message else json.dumps(error)[:200],
        code=code,
        error_type=kind if isinstance(kind, str) else None,
        payload=payload,
        usage=billed,
    )
    status = error.get("status")
    if (
        code in _RETRYABLE
        or kind in _RETRYABLE
        or (isinstance(status, int) and (status == 429 or status >= 500))
    ):
        exc.retryable = True
    return exc
