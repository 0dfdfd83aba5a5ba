"""HTTP error responses, JSON where a stream was asked for, and httpx's transport errors, as
:mod:`rxreact.errors`.

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

from rxreact.errors import (
    ModelConnectionError,
    ModelError,
    ModelHTTPError,
    ModelTimeoutError,
    StreamProtocolError,
    http_error_for_status,
)
from rxreact.model.http._call import Timeouts

__all__ = [
    "NOT_A_STREAM_TYPES",
    "not_a_stream",
    "provider_message",
    "retry_after",
    "status_error",
    "transport_error",
]

NOT_A_STREAM_TYPES = ("application/json", "text/html")
"""Content types that a stream request's answer is plainly not a stream in (the body is read)."""

_BODY_LIMIT = 2000
"""Characters of an error body kept on the exception."""


def status_error(response: httpx.Response, redact: Callable[[str], str]) -> ModelHTTPError:
    """The error for a response with an HTTP error status (its body is read here).

    A provider's JSON error keeps the provider's message. Any other body (an HTML page from the
    wrong kind of server, a proxy, a captive portal) is not quoted in the message: it says
    what was asked and what came back, with a hint (``POST http://…/chat/completions → 404
    text/html: is base_url right? …``); the body stays on ``error.body``.
    """
    response.read()
    text = redact(response.text)
    status = response.status_code
    kind = response.headers.get("content-type", "").split(";")[0].strip()
    # Read on every status that is retried: a 503 says when to come back as often as a 429.
    wait = retry_after(response.headers) if status == 429 or status >= 500 else None
    if kind.endswith("json") or (not kind and text.lstrip().startswith("{")):
        message = provider_message(text) or response.reason_phrase or f"HTTP {status}"
        return http_error_for_status(status, message, text[:_BODY_LIMIT], wait)
    hint = _hint(status)
    error = http_error_for_status(status, hint, text[:_BODY_LIMIT], wait)
    # The whole message, not "HTTP 404: hint": which request got which kind of answer.
    error.args = (
        f"{_request_line(response, redact)} → {status} {kind or 'no content type'}: {hint}",
    )
    return error


def _request_line(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """``POST http://host/v1/chat/completions``: what was asked."""
    return f"{response.request.method} {redact(str(response.request.url))}"


def _hint(status: int) -> str:
    """What an error status from a server that is not an OpenAI-compatible API suggests."""
    if status in (404, 405, 501):
        return (
            "is base_url right? It should be an OpenAI-compatible API's root, usually ending in /v1"
        )
    if status in (401, 403):
        return "the server refused the request: check the API key and base_url"
    if status >= 500:
        return "the server (or a proxy in front of it) failed; is base_url right?"
    return "not an OpenAI-compatible error response; is base_url right?"


def not_a_stream(
    response: httpx.Response, redact: Callable[[str], str], parse: Callable[[str], object]
) -> ModelError | None:
    """The error for a 2xx answer to a stream request that is plainly not a stream, else None.

    JSON is the provider's error (some send ``{"error": ...}`` with status 200: ``parse``, the
    wire format's event parser, raises it) or a protocol error; HTML is a proxy or a captive
    portal. Any other type is read as SSE: servers label event streams loosely
    (``text/plain``, none at all).
    """
    kind = response.headers.get("content-type", "")
    if not kind.startswith(NOT_A_STREAM_TYPES):
        return None
    response.read()
    text = redact(response.text)
    if kind.startswith("application/json"):
        try:
            parse(text)
        except ModelError as exc:
            return exc
    return StreamProtocolError(
        f"{_request_line(response, redact)} → {response.status_code} {kind.split(';')[0]}: "
        f"expected an event stream; is base_url right?"
    )


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


def transport_error(
    exc: httpx.HTTPError,
    origin: str,
    timeouts: Timeouts,
    phase: str,
    redact: Callable[[str], str],
) -> ModelError:
    """The one place where httpx's exceptions become ours.

    The message names the endpoint from our own fields and quotes httpx's reason with the key
    masked; httpx's exception stays attached as ``__cause__`` (its text carries no headers).
    """
    reason = redact(str(exc)) or type(exc).__name__
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return ModelTimeoutError("connect", timeouts.connect or 0.0)
    if isinstance(exc, httpx.TimeoutException):
        limit = timeouts.first_chunk if phase == "first_chunk" else timeouts.between_chunks
        return ModelTimeoutError(phase, limit or 0.0)
    if isinstance(exc, httpx.ConnectError):
        return ModelConnectionError(f"cannot connect to {origin}: {reason}")
    if isinstance(exc, httpx.TransportError):
        return ModelConnectionError(f"connection to {origin} failed: {reason}")
    return ModelError(f"request to {origin} failed: {reason}")
