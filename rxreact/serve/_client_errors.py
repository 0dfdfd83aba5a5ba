"""What a client is told about a failed run, on every protocol: the error's class and a text
that names no internal endpoint.

A model adapter's message is written for the operator (``cannot connect to 127.0.0.1:1``,
``POST http://10.0.0.5:9/v1/chat/completions → 404 text/html: is base_url right?``); a
client of the served agent must learn what failed, not where the model lives. So:

- a connection failure says only that the model could not be reached;
- an HTTP error keeps its status and the provider's own message (``context_length_exceeded``
  is the client's business), with any URL or ``host:port`` in it replaced;
- any other rxreact error keeps its message, scrubbed the same way; anything else is named
  by its type alone (a bug's text may say anything).

The whole error goes to the server's log (``rxreact.serve``) once per run, by
:class:`~rxreact.serve._runs.RunRegistry`.
"""

from __future__ import annotations

import re

from rxreact.errors import ModelConnectionError, ModelHTTPError, RxReactError

__all__ = ["error_text", "scrub"]

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]*")
_IPV6 = re.compile(r"\[[0-9a-fA-F:.%]+\](?::\d+)?")
_HOST_PORT = re.compile(r"\b[A-Za-z][\w-]*(?:\.[\w-]+)*:\d{1,5}\b")  # not a time (12:30)
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?\b")


def scrub(text: str) -> str:
    """``text`` with URLs, ``host:port`` pairs and IP addresses replaced by ``<endpoint>``."""
    for pattern in (_URL, _IPV6, _HOST_PORT, _IPV4):
        text = pattern.sub("<endpoint>", text)
    return text


def error_text(error: BaseException) -> str:
    """``Class: text`` for a client (see the module): rxreact's errors by name and a scrubbed
    message, anything else only by its type."""
    name = type(error).__name__
    if isinstance(error, ModelConnectionError):
        return f"{name}: the model's endpoint could not be reached"
    if isinstance(error, ModelHTTPError):
        return f"{name}: HTTP {error.status_code}: {scrub(error.provider_message)}"
    if isinstance(error, RxReactError):
        return f"{name}: {scrub(str(error))}"
    return f"internal error ({name})"
