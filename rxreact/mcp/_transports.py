"""How an :class:`~rxreact.mcp.MCPServer` reaches its server: a :data:`Transport` per kind, which
the SDK's ``Client`` is made from on every (re)connection."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rxreact._extras import import_extra

__all__ = ["Transport", "http_transport", "stdio_transport"]

Transport = Callable[[contextlib.AsyncExitStack], Any]
"""Makes what the SDK's ``Client`` connects through; the stack closes what it opened."""


def stdio_transport(command: str, args: Sequence[str], env: Mapping[str, str] | None) -> Transport:
    """A subprocess spoken to over its stdin/stdout (the SDK starts and stops it).

    Raises:
        ConfigurationError: the ``mcp`` package is missing.
    """
    stdio = import_extra("mcp.client.stdio", "mcp")
    parameters = stdio.StdioServerParameters(
        command=command, args=list(args), env=dict(env) if env is not None else None
    )

    def transport(_: contextlib.AsyncExitStack) -> Any:
        return parameters

    return transport


def http_transport(url: str, headers: Mapping[str, str] | None) -> Transport:
    """A streamable-HTTP endpoint, with ``headers`` on every request.

    Raises:
        ConfigurationError: the ``mcp`` package is missing.
    """
    streamable = import_extra("mcp.client.streamable_http", "mcp")
    httpx2 = import_extra("httpx2", "mcp")
    fixed_headers = dict(headers or {})

    def transport(stack: contextlib.AsyncExitStack) -> Any:
        # A new HTTP client per connection: a reconnect starts clean. The SDK leaves a
        # client it was given open, so the connection's exit stack closes it.
        client = httpx2.AsyncClient(headers=fixed_headers, timeout=httpx2.Timeout(30.0, read=300.0))
        stack.push_async_callback(client.aclose)
        return streamable.streamable_http_client(url, http_client=client)

    return transport
