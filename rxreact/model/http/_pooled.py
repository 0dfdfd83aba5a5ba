"""The socket of a *reused* keep-alive connection, before its response headers arrive.

httpcore reports a connection's socket through the ``trace`` extension only when it opens
the connection. A request sent on a pooled one has no such event, so until the response
headers are in, thread mode could not shut the socket down: a server trickling its headers
(a byte every 100 ms keeps every read within its timeout) held the thread past the
first-chunk limit, and a dispose could not free it. Here the pool itself is asked which
connection it gave to the request. The objects reached are httpcore 1.x's (``_pool``,
``_requests``, ``_connection``, ``_network_stream``); anything unexpected gives ``None``.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx

__all__ = ["pooled_socket"]


def pooled_socket(
    client: httpx.Client, url: httpx.URL | str, marker: object
) -> socket.socket | None:
    """The socket of the HTTP/1.1 connection the pool assigned to the request whose ``timeout``
    extension is the object ``marker`` (each attempt has its own), or ``None``."""
    try:
        transport: Any = client._transport_for_url(httpx.URL(url))
        pending = list(transport._pool._requests)  # a copy: the pool changes it under its lock
    except (AttributeError, TypeError):
        return None
    for pool_request in pending:
        extensions = getattr(getattr(pool_request, "request", None), "extensions", None)
        if not isinstance(extensions, dict) or extensions.get("timeout") is not marker:
            continue
        connection = getattr(getattr(pool_request, "connection", None), "_connection", None)
        # HTTP/2 multiplexes several requests on one socket: never shut down for one of them.
        if type(connection).__name__ != "HTTP11Connection":
            return None
        stream = getattr(connection, "_network_stream", None)
        sock = stream.get_extra_info("socket") if stream is not None else None
        return sock if isinstance(sock, socket.socket) else None
    return None
