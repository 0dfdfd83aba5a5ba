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
"""

from __future__ import annotations

import resource
import ssl
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

import httpx

__all__ = ["SHARD_SIZE", "Shard", "Shards", "connection_cap", "no_tls"]

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
