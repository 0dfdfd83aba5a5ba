"""One connected MCP client session, held open by one task on rxreact's I/O loop.

The SDK's client is a stack of anyio context managers (subprocess or HTTP client, task
groups, session) that must be left in the task that entered them. So each connection gets a
task that enters them, reports ready, and waits for ``stop``; calls from other tasks on the
same loop use the session meanwhile. A connection that broke (the task ended) is ``dead``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["Link", "is_connection_loss", "open_link"]

ClientFactory = Callable[[contextlib.AsyncExitStack], Awaitable[Any]]
"""Enters what a connection needs onto the stack and returns an un-entered ``mcp.Client``."""


class Link:
    """A live ``mcp.Client``; ``close()`` ends it (the subprocess, the HTTP session)."""

    def __init__(self) -> None:
        self.client: Any = None
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def dead(self) -> bool:
        """The holding task ended: the transport broke or the link was closed."""
        return self.task is None or self.task.done()

    async def close(self) -> None:
        """Leave the client's context (terminates a stdio server) and wait for it."""
        self.stop.set()
        if self.task is not None:
            with contextlib.suppress(BaseException):
                await self.task


async def open_link(factory: ClientFactory) -> Link:
    """Connect (the protocol handshake included) and return the held-open link.

    Raises:
        Exception: whatever the connection failed with (the innermost of an exception group).
    """
    link = Link()
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def hold() -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await factory(stack)
                link.client = await stack.enter_async_context(client)
                ready.set_result(None)
                await link.stop.wait()
        except BaseException as error:
            if not ready.done():
                if isinstance(error, Exception):
                    ready.set_exception(_innermost(error))
                else:
                    ready.cancel()
            if not isinstance(error, Exception):
                raise

    link.task = asyncio.get_running_loop().create_task(hold())
    try:
        await ready
    except BaseException:
        await link.close()
        raise
    return link


def is_connection_loss(error: BaseException, link: Link) -> bool:
    """Whether a failed request means the connection (or the server's session) is gone, so
    that a new connection may succeed: the process died, the socket broke, or the server
    forgot the session (HTTP 404 after a restart)."""
    if link.dead:
        return True
    from mcp.shared.exceptions import MCPError

    error = _innermost(error)
    if isinstance(error, MCPError):
        closed = -32000  # CONNECTION_CLOSED
        return error.code == closed or "session" in error.message.lower()
    import anyio

    lost = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
    if isinstance(error, lost):
        return True
    import httpx2

    return isinstance(error, httpx2.TransportError)


def _innermost(error: BaseException) -> Exception:
    """The first leaf of nested exception groups (anyio task groups wrap failures)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error if isinstance(error, Exception) else RuntimeError(repr(error))
