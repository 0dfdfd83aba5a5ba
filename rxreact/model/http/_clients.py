"""The default HTTP clients of a model: many small connection pools instead of one large one.

Why: httpcore's pool (httpx's transport) walks *every* connection it holds each time a
request starts or a response ends (``_assign_requests_to_connections``: closed? expired?
idle? available?). At a thousand concurrent streams that is a thousand connections walked
twice per request: in a profile of 1,000 paced agent runs in loop mode it was a fifth of all
the CPU of the process, more than reading and parsing the streams. (The same walk also closes
*any* idle connection once the pool holds more connections than its keep-alive limit, so with
httpx's defaults, 100 connections and 20 kept alive, a busy pool reconnects after every
response.) And a single default pool of 100 connections is what made 500 concurrent default
runs queue for a connection until the pool timeout failed them.

So a model that makes its own client makes :class:`Shards`: up to ``size`` connections per
httpx client, a new client when every one is full, and requests go to a client with room,
the most recently freed first (its idle connection is the one the request reuses). httpcore's
walk then costs ``size`` connections, whatever the concurrency. The clients share one SSL
context (building one reads the CA bundle: milliseconds). Connections in all are bounded by
the process's open-file limit (:func:`connection_cap`); past it, requests queue in httpcore's
pools rather than failing to open a socket.

:class:`ModelClients` is what a model holds: the client a user passed (used, never closed), or
its own shards, made on first use and closed by :meth:`ModelClients.close` or when the model
is collected.
"""

from __future__ import annotations

import asyncio
import resource
import ssl
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import httpx

from rxreact.model.http._aio import io_loop, on_io_loop, run_on_io_loop
from rxreact.model.http._asyncio_network import AsyncioTransport

__all__ = ["SHARD_SIZE", "ModelClients", "Shard", "Shards", "connection_cap", "no_tls"]

_C = TypeVar("_C", httpx.Client, httpx.AsyncClient)

SHARD_SIZE = 4
"""Connections per client. Each request start and end makes httpcore poll every idle
connection of its pool (``select`` on the socket, to see whether the server closed it) and
count the idle ones once per idle one (quadratic): at 16 per client that still took a sixth
of the CPU of 300 paced runs under a profiler; at 4 it is a few microseconds. A thousand
streams then need 250 clients (a few kB each, sharing one SSL context)."""


def connection_cap() -> int:
    """Connections a model opens at most: three quarters of the open-file limit (each
    connection is a file descriptor; the rest is left to the application), at least 100."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 20
    return max(100, soft * 3 // 4)


def no_tls() -> ssl.SSLContext:
    """For a plain-HTTP loopback endpoint: a context that verifies but trusts no CA, made
    without reading the CA bundle (milliseconds off the first request). Were TLS ever asked
    of it, verification would fail: it never connects unverified."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class Shard(Generic[_C]):
    """One client and the requests it carries now (``load``)."""

    __slots__ = ("client", "load")

    def __init__(self, client: _C) -> None:
        self.client: _C = client
        self.load = 0


class Shards(Generic[_C]):
    """httpx clients of at most ``size`` connections each, made as concurrency needs them.

    :meth:`acquire` before a request and :meth:`release` after its response is closed (any
    thread). The clients with room form a stack; a request takes the top one, so a client that
    just had a response end (it becomes the top again when it was full) serves the next
    request on the connection that response left idle.

    Args:
        make: builds a client from its limits and the shared SSL context.
        size: connections per client.
        cap: connections in all (default :func:`connection_cap`); past it requests share the
            least loaded client and wait in its pool.
        verify: makes the SSL context the clients share (default httpx's, with the CA bundle).
    """

    def __init__(
        self,
        make: Callable[[httpx.Limits, ssl.SSLContext], _C],
        size: int = SHARD_SIZE,
        cap: int | None = None,
        verify: Callable[[], ssl.SSLContext] = httpx.create_ssl_context,
    ) -> None:
        self._make: Callable[[httpx.Limits, ssl.SSLContext], _C] = make
        self._verify = verify
        self._size = size
        self._max_shards = max(1, (connection_cap() if cap is None else cap) // size)
        self._lock = threading.Lock()
        self._all: list[Shard[_C]] = []
        self._room: list[Shard[_C]] = []  # the shards with load < size; the top is used first
        self._ssl: ssl.SSLContext | None = None

    def acquire(self) -> Shard[_C]:
        """A client for one request (its load counted until :meth:`release`)."""
        with self._lock:
            room = self._room
            if room:
                shard = room[-1]
            elif len(self._all) < self._max_shards:
                shard = self._new_shard()
                room.append(shard)
            else:
                shard = min(self._all, key=_load)  # all full: wait in the least loaded pool
            shard.load += 1
            if shard.load == self._size:
                room.pop()
            return shard

    def release(self, shard: Shard[_C]) -> None:
        """The request's response is closed: its connection is free (or closed)."""
        with self._lock:
            shard.load -= 1
            if shard.load == self._size - 1:
                self._room.append(shard)

    def take_all(self) -> list[_C]:
        """Every client made so far, forgotten here (for closing them)."""
        with self._lock:
            clients = [shard.client for shard in self._all]
            self._all, self._room = [], []
            return clients

    def __len__(self) -> int:
        return len(self._all)

    def _new_shard(self) -> Shard[_C]:
        if self._ssl is None:
            self._ssl = self._verify()
        limits = httpx.Limits(max_connections=self._size, max_keepalive_connections=self._size)
        shard = Shard(self._make(limits, self._ssl))
        self._all.append(shard)
        return shard


def _load(shard: Shard[_C]) -> int:
    return shard.load


class ModelClients:
    """The HTTP clients of one model: the one the user passed, else shards of our own.

    :meth:`sync` (thread mode) and :meth:`asynchronous` (loop mode) give the client for one
    request, with the shard to release after its response is closed (``None`` for a user's
    client). Our shards are made on first use; the user's client is never closed here.
    """

    def __init__(
        self,
        http_client: httpx.Client | httpx.AsyncClient | None,
        verify: Callable[[], ssl.SSLContext],
    ) -> None:
        self.user_client = http_client
        """The client the user passed (used and not closed), or ``None``."""
        self._verify = verify
        self._lock = threading.Lock()
        self._shards: Shards[httpx.Client] | None = None
        self._ashards: Shards[httpx.AsyncClient] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._sync_finalizer: weakref.finalize[Any, Any] | None = None

    def sync(self) -> tuple[httpx.Client, Shards[httpx.Client] | None, Shard[httpx.Client] | None]:
        """The blocking client for one request: the user's, else one of our shards."""
        if isinstance(self.user_client, httpx.Client):
            return self.user_client, None, None
        with self._lock:
            shards = self._shards
            if shards is None:
                self._shards = shards = Shards(_sync_client, verify=self._verify)
                # Connections stay open in the pools between requests: a model dropped without
                # close() closes them when collected, not with a ResourceWarning per socket.
                self._sync_finalizer = weakref.finalize(self, _close_all, shards)
                self._sync_finalizer.atexit = False  # the process's end closes them anyway
        # Made lazily, on the I/O thread: the first client's SSL context reads the CA bundle.
        shard = shards.acquire()
        return shard.client, shards, shard

    def asynchronous(
        self,
    ) -> tuple[
        httpx.AsyncClient, Shards[httpx.AsyncClient] | None, Shard[httpx.AsyncClient] | None
    ]:
        """The I/O loop's client for one request: the user's, else one of our shards."""
        if isinstance(self.user_client, httpx.AsyncClient):
            return self.user_client, None, None
        with self._lock:
            shards = self._ashards
            if shards is None:
                self._ashards = shards = Shards(_async_client, verify=self._verify)
                # Bound to the I/O loop, where a caller cannot easily close them: a model that
                # is dropped without close() has its clients closed there, not left to the GC.
                self._finalizer = weakref.finalize(self, _close_all_soon, shards)
        shard = shards.acquire()
        return shard.client, shards, shard

    def close(self) -> None:
        """Close our shards (a later request makes new ones); the user's client is left alone.

        Loop mode's clients are closed on the I/O loop, waited for unless called from it.
        """
        with self._lock:
            shards, self._shards = self._shards, None
            ashards, self._ashards = self._ashards, None
        if shards is not None:
            if self._sync_finalizer is not None:
                self._sync_finalizer.detach()
            _close_all(shards)
        if ashards is not None:
            if self._finalizer is not None:
                self._finalizer.detach()
            if on_io_loop():
                _close_all_soon(ashards)
            else:
                run_on_io_loop(_aclose_all(ashards))


_closing: set[asyncio.Task[None]] = set()
"""Closes in flight (the loop keeps only weak references to its tasks)."""


def _sync_client(limits: httpx.Limits, ssl_context: ssl.SSLContext) -> httpx.Client:
    return httpx.Client(limits=limits, verify=ssl_context)  # timeouts are set per request


def _async_client(limits: httpx.Limits, ssl_context: ssl.SSLContext) -> httpx.AsyncClient:
    # Proxies from the environment still get httpx's own transports (its mounts).
    transport = AsyncioTransport(limits=limits, ssl_context=ssl_context)
    return httpx.AsyncClient(transport=transport, verify=ssl_context)


def _close_all(shards: Shards[httpx.Client]) -> None:
    for client in shards.take_all():
        client.close()


async def _aclose_all(shards: Shards[httpx.AsyncClient]) -> None:
    for client in shards.take_all():
        await client.aclose()


def _close_all_soon(shards: Shards[httpx.AsyncClient]) -> None:
    """Close the clients on the I/O loop, without waiting (callable from any thread)."""
    loop = io_loop()

    def start() -> None:
        task = loop.create_task(_aclose_all(shards))
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    loop.call_soon_threadsafe(start)
