"""Give back the pool slots httpcore loses when a loop-mode attempt is cancelled.

A task cancelled while httpcore's async pool has just given it a *new* connection, before
that connection is open, leaves the connection in the pool for ever: it is neither closed,
nor idle, nor expired, so nothing reaps it, and it is not available either
(encode/httpcore#1093, open, with the fix proposed in encode/httpcore#1099). Loop mode cancels
an attempt's task on every dispose and timeout, so under faults such connections pile up
until the pool is full and every request ends in a pool timeout (the soak of issue 11 found
94 of them after 20,000 runs). The same cancellation can leave the attempt's own pool request
behind.

:func:`reclaim` runs after each attempt, on the loop, without awaiting (so no cancellation
can cut it short): it drops the attempt's pool request if it is still there, and every
connection that no pending request uses and that is neither idle, available nor closed (it
was being opened, or had just been, for a cancelled request), then lets the pool hand the
freed slots to queued requests. The objects reached are httpcore 1.x's (``_pool``,
``_requests``, ``_connections``, ``_assign_requests_to_connections``); anything unexpected
makes it do nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

__all__ = ["reclaim"]

_closing: set[asyncio.Task[None]] = set()
"""Closes in flight (the loop keeps only weak references to its tasks)."""


def reclaim(client: httpx.AsyncClient, url: httpx.URL | str, marker: object) -> int:
    """Drop what a finished attempt (its ``timeout`` extension is ``marker``) left in the pool,
    and connections orphaned before they opened. Returns how many connections were dropped.
    Call it on the client's loop."""
    try:
        transport: Any = client._transport_for_url(httpx.URL(url))
        pool: Any = transport._pool
        requests: list[Any] = pool._requests
        connections: list[Any] = pool._connections
        assign = pool._assign_requests_to_connections
    except AttributeError:
        return 0
    dropped: list[Any] = []
    for pool_request in [r for r in requests if _marker_of(r) is marker]:
        requests.remove(pool_request)
        connection = getattr(pool_request, "connection", None)
        if connection is not None and not _reusable(connection):
            dropped.append(connection)  # in an unknown state after the cancellation
    waited_on = {id(r.connection) for r in requests if getattr(r, "connection", None) is not None}
    for connection in connections:
        # No pending request is using it, and it is not idle, available or closed: it was
        # opening (or opened) for a request that was cancelled, and nothing will reap it.
        if id(connection) not in waited_on and not _reusable(connection):
            dropped.append(connection)
    if not dropped:
        return 0
    for connection in dropped:
        if connection in connections:
            connections.remove(connection)
    try:
        closing = list(assign())  # queued requests may now have a slot
    except Exception:  # a pool that changed shape: what was dropped stays dropped
        closing = []
    loop = asyncio.get_running_loop()
    for connection in {id(c): c for c in dropped + closing}.values():
        task = loop.create_task(connection.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)
    return len(dropped)


def _marker_of(pool_request: Any) -> object:
    extensions = getattr(getattr(pool_request, "request", None), "extensions", None)
    return extensions.get("timeout") if isinstance(extensions, dict) else None


def _reusable(connection: Any) -> bool:
    """Idle, available or closed: the pool knows what to do with it."""
    try:
        return bool(connection.is_idle() or connection.is_available() or connection.is_closed())
    except Exception:
        return True  # unknown: leave it to the pool
