"""One listening connection per process and listen DSN, for every Postgres event log in it.

``LISTEN`` needs a connection of its own (not from a pool: a pooled connection may not stay
ours, and behind a transaction pooler a LISTEN is lost with its server connection). One per
log would make a process that opens several logs (table prefixes, or one per request
handler) hold one each; here the logs of a process that name the same ``listen_dsn`` share
one connection, each listening on its log's channel::

    log A (channel a_runs) ─┐                      ┌─ NOTIFY a_runs 'e:r1' -> A's reader
    log B (channel b_runs) ─┼─ listen(dsn, ...) ─ one connection, one thread
    log C (channel a_runs) ─┘   (counted)          └─ NOTIFY a_runs 'n'    -> A's and C's

:func:`listen` takes a :class:`Listening` (made, connected and listening before it returns,
or polling meanwhile); closing the last one of a DSN closes its connection and stops its
thread. A lost connection is made again at most once a second, and every listener is told
that notifications may have been missed (so its reader reads everything once).
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Listening", "listen"]

log = logging.getLogger(__name__)

_RETRY_S = 1.0

_hubs: dict[str, _Hub] = {}
_hubs_lock = threading.Lock()


def _forget_hubs() -> None:
    """In a forked child: the parent's connections and threads are not this process's (its
    logs listen anew; closing the parent's sockets here would cut the parent's off)."""
    global _hubs_lock
    _hubs_lock = threading.Lock()
    _hubs.clear()


os.register_at_fork(after_in_child=_forget_hubs)


class Listening:
    """One log's share of its DSN's connection: the payloads that arrived on its channel."""

    def __init__(self, hub: _Hub, channel: str, wake: Callable[[], None]) -> None:
        self._hub = hub
        self.channel = channel
        self._wake = wake
        self._lock = threading.Lock()
        self._payloads: set[str] = set()
        self._missed = False
        self._closed = False

    @property
    def connected(self) -> bool:
        """The connection listens now (False: the reader must poll meanwhile)."""
        return self._hub.connected

    def take(self) -> set[str] | None:
        """The payloads that arrived since the last take; None: some may have been missed
        (the connection was lost), so read everything."""
        with self._lock:
            payloads, self._payloads = self._payloads, set()
            missed, self._missed = self._missed, False
        return None if missed else payloads

    def close(self) -> None:
        """Stop listening (idempotent); the last listener of the DSN closes its connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        _release(self._hub, self)

    def _arrived(self, payload: str | None) -> None:
        with self._lock:
            if payload is None:
                self._missed = True
            else:
                self._payloads.add(payload)
        self._wake()


def listen(dsn: str, channel: str, psycopg: Any, wake: Callable[[], None]) -> Listening:
    """Listen on ``channel`` through the process's connection to ``dsn``; ``wake()`` is
    called (on the listening thread) whenever something arrived for it."""
    with _hubs_lock:
        hub = _hubs.get(dsn)
        if hub is None:
            hub = _hubs[dsn] = _Hub(dsn, psycopg)
        listening = Listening(hub, channel, wake)
        hub.add(listening)
    return listening


def _release(hub: _Hub, listening: Listening) -> None:
    with _hubs_lock:
        if not hub.remove(listening):
            return
        if _hubs.get(hub.dsn) is hub:
            del _hubs[hub.dsn]
    hub.stop()


class _Hub:
    """A DSN's connection and the thread that reads its notifications."""

    def __init__(self, dsn: str, psycopg: Any) -> None:
        self.dsn = dsn
        self._psycopg = psycopg
        self._lock = threading.Lock()  # the connection and the channels
        self._listeners: dict[str, list[Listening]] = {}
        self._conn: Any = None
        self._retry_at = 0.0
        self._stopped = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._thread = threading.Thread(
            target=self._loop, name="rxreact-postgres-listen", daemon=True
        )
        self._thread.start()

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and not conn.closed

    def add(self, listening: Listening) -> None:
        """Listen on its channel now (connecting if need be; on failure the thread tries
        again)."""
        with self._lock:
            first = listening.channel not in self._listeners
            self._listeners.setdefault(listening.channel, []).append(listening)
            if self._ensure() and first:
                try:
                    self._conn.execute(f"LISTEN {listening.channel}")
                except self._psycopg.Error as error:
                    self._lost(error)
        self._poke()  # the thread selects on the connection it has now

    def remove(self, listening: Listening) -> bool:
        """Forget it; True when it was the last (the caller then stops the hub)."""
        with self._lock:
            members = self._listeners.get(listening.channel, [])
            if listening in members:
                members.remove(listening)
            if not members:
                self._listeners.pop(listening.channel, None)
                if self.connected:
                    with contextlib.suppress(self._psycopg.Error):
                        self._conn.execute(f"UNLISTEN {listening.channel}")
            return not self._listeners

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
        self._poke()
        self._thread.join(10)
        with self._lock:
            self._close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _poke(self) -> None:
        with contextlib.suppress(OSError):  # full: a wake-up is pending anyway
            os.write(self._wake_w, b"w")

    # -- under the lock -------------------------------------------------------------------------

    def _ensure(self) -> bool:
        """Connected and listening on every channel (True), or not now: a new try at most
        once a second."""
        if self.connected:
            return True
        self._conn = None
        if time.monotonic() < self._retry_at:
            return False
        try:
            conn = self._psycopg.connect(self.dsn, autocommit=True, prepare_threshold=None)
        except self._psycopg.Error as error:
            log.warning("Postgres event log: cannot listen (polling meanwhile): %s", error)
            self._retry_at = time.monotonic() + _RETRY_S
            return False
        try:
            for channel in self._listeners:
                conn.execute(f"LISTEN {channel}")
        except self._psycopg.Error as error:
            with contextlib.suppress(self._psycopg.Error):
                conn.close()
            log.warning("Postgres event log: cannot listen (polling meanwhile): %s", error)
            self._retry_at = time.monotonic() + _RETRY_S
            return False
        self._conn = conn
        return True

    def _lost(self, error: BaseException) -> None:
        log.warning("Postgres event log: the listening connection failed: %s", error)
        self._close()
        self._retry_at = time.monotonic() + _RETRY_S
        self._tell_all(None)

    def _close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(self._psycopg.Error):
                conn.close()

    def _tell_all(self, payload: str | None) -> None:
        for members in self._listeners.values():
            for listening in members:
                listening._arrived(payload)

    # -- the thread -----------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._lock:
                if self._stopped:
                    return
                was = self.connected
                ok = self._ensure()
                if ok and not was:  # (re)connected: what came meanwhile was not heard
                    self._tell_all(None)
                fd = self._conn.fileno() if ok else None
            sources = [self._wake_r] if fd is None else [self._wake_r, fd]
            try:
                ready, _, _ = select.select(sources, [], [], None if ok else _RETRY_S)
            except (OSError, ValueError):  # closed meanwhile by a failed LISTEN: look again
                continue
            if self._wake_r in ready:
                os.read(self._wake_r, 4096)
            if fd is not None and fd in ready:
                with self._lock:
                    self._drain()

    def _drain(self) -> None:
        if not self.connected:
            return
        try:
            notifies = list(self._conn.notifies(timeout=0.0))
        except self._psycopg.Error as error:
            self._lost(error)
            return
        for notify in notifies:
            for listening in self._listeners.get(notify.channel, []):
                listening._arrived(notify.payload)
