"""Anthropic's usage and error objects as rxreact's, and the protocol errors of its wire format
(shared by the stream parser and the whole-message reader)."""

from __future__ import annotations

import json
from typing import Any

from rxreact.errors import ProviderStreamError
from rxreact.messages import Usage
from rxreact.model.http.wire_errors import excerpt, protocol_error

__all__ = [
    "RETRYABLE_ERRORS",
    "lenient_json",
    "load_object",
    "protocol_error",
    "stream_error",
    "usage_of",
]

RETRYABLE_ERRORS = frozenset({"overloaded_error", "api_error"})
"""In-stream error types that are a 529 / 500 sent after the headers: retried before the
first chunk, like the statuses."""


def usage_of(raw: dict[str, Any]) -> Usage:
    """Anthropic's usage object as a :class:`~rxreact.messages.Usage`.

    ``prompt_tokens`` counts every input token: ``input_tokens`` (the uncached ones) plus
    ``cache_creation_input_tokens`` and ``cache_read_input_tokens``, as OpenAI's
    ``prompt_tokens`` includes its cached tokens; the two cache counts are kept as extras.
    ``completion_tokens`` is ``output_tokens``; ``total_tokens`` their sum.

    Raises:
        ValueError: a count is not an integer.
    """
    counts = {}
    for key in (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ):
        value = raw.get(key)
        if value is not None:
            if type(value) is not int:
                raise ValueError(f"usage {key} is not an integer")
            counts[key] = value
    extras = {k: counts[k] for k in counts if k.startswith("cache_")}
    prompt = sum(counts.get(k, 0) for k in ("input_tokens", *extras))
    completion = counts.get("output_tokens")
    total = prompt + (completion or 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total, **extras)


def stream_error(error: Any, usage: Usage | None = None) -> ProviderStreamError:
    """The error of an ``error`` event (``{"type": "error", "error": {"type", "message"}}``):
    ``overloaded_error`` and ``api_error`` are retryable before the first chunk."""
    if type(error) is not dict:
        return ProviderStreamError(str(error), payload={"error": error}, usage=usage)
    message, error_type = error.get("message"), error.get("type")
    exc = ProviderStreamError(
        message if type(message) is str and message else excerpt(json.dumps(error)),
        error_type=error_type if type(error_type) is str else None,
        payload=error,
        usage=usage,
    )
    if error_type in RETRYABLE_ERRORS:
        exc.retryable = True
    return exc


def lenient_json(data: str | bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise protocol_error("invalid JSON", data) from exc


def load_object(data: str | bytes) -> dict[str, Any]:
    obj = lenient_json(data)
    if type(obj) is not dict:
        raise protocol_error("expected a JSON object", data)
    return obj
