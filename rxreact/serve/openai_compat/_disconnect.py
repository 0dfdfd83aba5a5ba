"""Waiting on a run while its client may leave: a response that is not streamed writes nothing
until the run ends, so nothing tells it the client left unless it listens for it.

``http.disconnect`` is the ASGI message a server sends once the connection closes; after the
request body was read, the next ``receive()`` waits for exactly that.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

__all__ = ["ClientLeft", "while_connected"]

T = TypeVar("T")


class ClientLeft(Exception):
    """The client disconnected before the awaited work was done (the work was cancelled)."""


async def while_connected(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result, unless the client disconnects first: then ``work`` is cancelled
    and :class:`ClientLeft` raised, at once (no polling).

    Call it after the request's body was read (reading it is what ``receive`` is for before).
    """
    task = asyncio.ensure_future(work)
    leaving = asyncio.ensure_future(_disconnect(request))
    try:
        await asyncio.wait({task, leaving}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        leaving.cancel()
        if not task.done():
            task.cancel()
    if task.done() and not task.cancelled():
        return task.result()
    raise ClientLeft


async def _disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
