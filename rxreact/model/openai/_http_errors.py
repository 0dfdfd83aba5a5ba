"""HTTP error responses, and JSON where a stream was asked for, as :mod:`rxreact.errors`.

The status picks the class (:func:`~rxreact.errors.http_error_for_status`); the message is the
provider's own, read from the body whatever its shape; ``Retry-After`` / ``retry-after-ms``
become ``retry_after`` of a ``RateLimitError`` (429) or ``ServerError`` (5xx). Everything
quoted from the body goes through ``redact`` first (a provider may echo the API key in a 401).
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable

import httpx

from rxreact.errors import ModelError, ModelHTTPError, StreamProtocolError, http_error_for_status
from rxreact.model.openai.wire import parse_chunk

__all__ = ["NOT_A_STREAM_TYPES", "not_a_stream", "provider_message", "retry_after", "status_error"]

NOT_A_STREAM_TYPES = ("application/json", "text/html")
"""Content types that a stream request's answer is plainly not a stream in (the body is read)."""

_BODY_LIMIT = 2000
"""Characters of an error body kept on the exception."""


def status_error(response: httpx.Response, redact: Callable[[str], str]) -> ModelHTTPError:
    """The error for a response with an HTTP error status (its body is read here)."""
    response.read()
    text = redact(response.text)
    status = response.status_code
    message = provider_message(text) or response.reason_phrase or f"HTTP {status}"
    # Read on every status that is retried: a 503 says when to come back as often as a 429.
    wait = retry_after(response.headers) if status == 429 or status >= 500 else None
    return http_error_for_status(status, message, text[:_BODY_LIMIT], wait)


def not_a_stream(response: httpx.Response, redact: Callable[[str], str]) -> ModelError | None:
    """The error for a 2xx answer to a stream request that is plainly not a stream, else None.

    JSON is the provider's error (some send ``{"error": ...}`` with status 200) or a protocol
    error; HTML is a proxy or a captive portal. Any other type is read as SSE: servers label
    event streams loosely (``text/plain``, none at all).
    """
    kind = response.headers.get("content-type", "")
    if not kind.startswith(NOT_A_STREAM_TYPES):
        return None
    response.read()
    text = redact(response.text)
    if kind.startswith("application/json"):
        try:
            parse_chunk(text)
        except ModelError as exc:
            return exc
    return StreamProtocolError(f"expected an event stream, got {kind}: {text[:200]!r}")


def provider_message(text: str) -> str:
    """The provider's message from an error body: ``{"error": {"message"}}``, or the text."""
    try:
        obj = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    if isinstance(obj, dict):
        error = obj.get("error", obj)
        if isinstance(error, str):
            return error
        if isinstance(error, dict):
            for key in ("message", "detail", "msg"):
                value = error.get(key)
                if isinstance(value, str) and value:
                    return value
    return text.strip()[:500]


def retry_after(headers: httpx.Headers) -> float | None:
    """Seconds asked by ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
