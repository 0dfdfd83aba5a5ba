"""The reader of a :class:`~rxreact.runs.postgres.PostgresEventLog`: one thread per log, for
every follower of the process, every cancel and decision addressed to it, and its heartbeats.

**Woken by LISTEN/NOTIFY.** With a ``listen_dsn`` the thread holds one connection of its own
(not from the pool: a pooled connection may not stay ours, and behind a transaction pooler a
LISTEN is lost with its server connection) that listens on the log's channel. Every commit
another process makes for a run (events, a park, a cancel, a decision) notifies it, and one
round of reads serves every follower of the process: one query for the entries of every
followed run (``unnest`` of their cursors), one for the new cancels and decisions. So a
process following 20 runs holds the pool's connections plus this one, never one per run.
Without ``listen_dsn`` (behind PgBouncer) the thread reads every ``poll`` seconds while
anything is followed or owned, and sleeps between heartbeats when nothing is; notices are
only wake-ups, so a lost one (a reconnect) costs latency, never an event.

A follower whose inbox is full is left out of reads until it drains
(:mod:`rxreact.runs.redis._reader`), and entries are decoded once, for every follower of their
run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from rxreact._postgres import PostgresPool
from rxreact.errors import RunLostError, RunNotFoundError
from rxreact.runs._delivery import COUNT, deliver
from rxreact.runs._follower import Follower

__all__ = ["PostgresReader"]

log = logging.getLogger(__name__)

_MARGIN = 100  # ids of cancels and decisions read again after the last one seen

NOTICES = "n"
"""The payload of a cancel's or a decision's notification (a run's events: ``e:<run id>``)."""


class _Woken(NamedTuple):
    """What a wake-up asks the reader to read."""

    any: bool
    notices: bool
    runs: set[str] | None
    """The runs whose events to read; None: every followed run."""


_EVERYTHING = _Woken(True, True, None)
_NOTHING = _Woken(False, False, set())
"""Ids of cancels and decisions read again after the last one seen (see ``notices``)."""


class _Listener:
    """The one listening connection, (re)connected on demand; None while it cannot be had."""

    def __init__(self, dsn: str, channel: str, psycopg: Any) -> None:
        self._dsn = dsn
        self._channel = channel
        self._psycopg = psycopg
        self.conn: Any = None
        self._retry_at = 0.0

    def ensure(self) -> bool:
        """Connected and listening (True), or not now: a new try at most once a second."""
        if self.conn is not None and not self.conn.closed:
            return True
        self.conn = None
        if time.monotonic() < self._retry_at:
            return False
        try:
            conn = self._psycopg.connect(self._dsn, autocommit=True, prepare_threshold=None)
            conn.execute(f"LISTEN {self._channel}")
        except self._psycopg.Error as error:
            log.warning("Postgres event log: cannot listen (polling meanwhile): %s", error)
            self._retry_at = time.monotonic() + 1.0
            return False
        self.conn = conn
        return True

    def drain(self) -> set[str]:
        """The payloads of the notifications that arrived."""
        try:
            return {n.payload for n in self.conn.notifies(timeout=0.0)}
        except self._psycopg.Error as error:
            log.warning("Postgres event log: the listening connection failed: %s", error)
            self.close()
            return {NOTICES}

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(self._psycopg.Error):
                conn.close()


class PostgresReader:
    """The reader thread (started on first use) and what it reads for."""

    def __init__(
        self,
        db: PostgresPool,
        sql: dict[str, str],
        *,
        channel: str,
        listen_dsn: str | None,
        poll: float,
        beat: float,
        gone_after: float,
        busy: Callable[[], bool],
        on_cancel: Callable[[str], None],
        heartbeat: Callable[[], None],
        on_decision: Callable[[str, str, bool, str | None], None],
    ) -> None:
        self._db = db
        self._sql = sql
        self._listener = None if listen_dsn is None else _Listener(listen_dsn, channel, db.psycopg)
        self._poll = poll
        self._beat = beat
        self._gone_after = gone_after
        self._busy = busy
        self._on_cancel = on_cancel
        self._on_decision = on_decision
        self._heartbeat = heartbeat
        self._lock = threading.Lock()
        self._followers: set[Follower] = set()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closed = False
        self._last = {"c": 0, "d": 0}
        self._seen: dict[str, set[int]] = {"c": set(), "d": set()}

    def ensure_started(self) -> None:
        """Start the thread (once); cancels and decisions made after this returns are seen."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            with self._db.read("read cancels") as cur:
                cur.execute(self._sql["last_ids"])
                self._last["c"], self._last["d"] = cur.fetchone()
            if self._listener is not None:
                self._listener.ensure()
            self._thread = threading.Thread(
                target=self._loop, name="rxreact-postgres-event-log", daemon=True
            )
            self._thread.start()

    def add(self, follower: Follower) -> None:
        self.ensure_started()
        with self._lock:
            self._followers.add(follower)
        self.wake()

    def remove(self, follower: Follower) -> None:
        with self._lock:
            self._followers.discard(follower)

    def wake(self) -> None:
        with self._lock:
            if self._closed:  # its pipe is closed, and the number may be another file's now
                return
            # Full: a wake-up is pending anyway.
            with contextlib.suppress(OSError):
                os.write(self._wake_w, b"w")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            with contextlib.suppress(OSError):  # full: a wake-up is pending anyway
                os.write(self._wake_w, b"w")
        if thread is not None:
            thread.join(10)
        if self._listener is not None:
            self._listener.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- the thread ---------------------------------------------------------------------------

    def _wait(self, seconds: float) -> _Woken:
        """Wait for a wake-up, a notification or ``seconds``: what there is to read."""
        sources = [self._wake_r]
        listener = self._listener
        if listener is not None and listener.ensure():
            sources.append(listener.conn.fileno())
        ready, _, _ = select.select(sources, [], [], max(seconds, 0.0))
        if self._wake_r in ready:
            os.read(self._wake_r, 4096)
            return _EVERYTHING
        if listener is None or listener.conn is None or not ready:
            return _EVERYTHING if listener is None or listener.conn is None else _NOTHING
        payloads = listener.drain()
        runs = {p[2:] for p in payloads if p.startswith("e:")}
        return _Woken(bool(payloads), NOTICES in payloads, runs)

    def _loop(self) -> None:
        next_beat = time.monotonic()
        woken = _EVERYTHING
        while True:
            with self._lock:
                if self._closed:
                    return
                active = bool(self._followers)
            try:
                now = time.monotonic()
                if now >= next_beat:
                    self._heartbeat()
                    self._check_alive(everyone=True)
                    next_beat = now + self._beat
                    woken = _EVERYTHING  # a safety net for a notice lost in a reconnect
                elif woken.any:
                    self._check_alive(everyone=False)
                # Each in its own guard: a failure reading notices must not starve followers.
                if woken.notices:
                    self._guarded("cancels and decisions", self._read_notices)
                if woken.any:
                    self._guarded("entries", self._read_entries, woken.runs)
            except Exception:  # the one reader every follower relies on must not stop
                log.exception("Postgres event log reader failed; going on in 1 s")
                woken = self._wait(1.0)
                continue
            until_beat = next_beat - time.monotonic()
            listening = self._listener is not None and self._listener.conn is not None
            if listening or not (active or self._busy()):
                wait = until_beat
            else:
                wait = min(self._poll, until_beat)
            woken = self._wait(wait)

    @staticmethod
    def _guarded(what: str, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except Exception:  # logged; the next pass reads again
            log.exception("Postgres event log reader: reading %s failed", what)

    def _read_notices(self) -> None:
        last, seen = self._last, self._seen
        with self._db.read("read cancels and decisions") as cur:
            cur.execute(self._sql["notices"], (last["c"] - _MARGIN, last["d"] - _MARGIN))
            rows = cur.fetchall()
        for kind, notice_id, run_id, call_id, approved, reason in rows:
            if notice_id in seen[kind]:
                continue
            seen[kind].add(notice_id)
            last[kind] = max(last[kind], notice_id)
            if kind == "c":
                self._guarded(f"cancel {notice_id}", self._on_cancel, run_id)
            else:
                decided = (run_id, call_id, bool(approved), reason)
                self._guarded(f"decision {notice_id}", self._on_decision, *decided)
        for kind in seen:  # only the margin is ever looked at again
            low = last[kind] - _MARGIN
            seen[kind] = {i for i in seen[kind] if i > low}

    def _groups(self) -> dict[str, list[Follower]]:
        with self._lock:
            followers = list(self._followers)
        groups: dict[str, list[Follower]] = {}
        for follower in followers:
            if follower.wants_more():
                groups.setdefault(follower.run_id, []).append(follower)
        return groups

    def _read_entries(self, runs: set[str] | None) -> None:
        """Read for every followed run, or only ``runs`` (those a notice named)."""
        groups = self._groups()
        if runs is not None:
            groups = {r: members for r, members in groups.items() if r in runs}
        while groups:
            run_ids = sorted(groups)
            cursors = [min(f.cursor for f in groups[r]) for r in run_ids]
            with self._db.read("read events") as cur:
                cur.execute(self._sql["follow"], (run_ids, cursors, COUNT))
                rows = cur.fetchall()
            by_run: dict[str, list[tuple[int, str, bytes]]] = {}
            for run_id, seq, kind, body in rows:
                by_run.setdefault(run_id, []).append((seq, kind, body))
            more: dict[str, list[Follower]] = {}
            for run_id, entries in by_run.items():
                members = groups[run_id]
                deliver(
                    run_id, members, [(seq, _fields(kind, body)) for seq, kind, body in entries]
                )
                if len(entries) == COUNT and all(f.wants_more() for f in members):
                    more[run_id] = members
            groups = more

    def _check_alive(self, everyone: bool) -> None:
        """Fail the followers of runs that are gone, or whose owner stopped beating longer
        ago than ``gone_after`` (a lost run nobody resumed)."""
        with self._lock:
            followers = [
                f
                for f in self._followers
                if not f.finished and (everyone or f.checked_at == float("-inf"))
            ]
        if not followers:
            return
        with self._db.read("check runs") as cur:
            cur.execute(
                self._sql["alive"], (self._gone_after, sorted({f.run_id for f in followers}))
            )
            rows = {row[0]: row[1:] for row in cur.fetchall()}
        now = time.time()
        for follower in followers:
            row = rows.get(follower.run_id)
            verdict: Exception | None = None
            if row is None:
                verdict = (
                    _lost(follower.run_id, "its process is gone")
                    if follower.seen_running
                    else RunNotFoundError(f"no run {follower.run_id!r} in this event log")
                )
            else:
                state, stale, info = row
                if state == "lost":
                    verdict = _lost(follower.run_id, info or "it cannot be resumed")
                elif state == "running" and stale:
                    verdict = _lost(follower.run_id, "its process is gone and none resumed it")
                follower.seen_running = follower.seen_running or state in ("running", "parked")
            if verdict is not None:
                follower.push([verdict])
            follower.checked_at = now


def _fields(kind: str, body: bytes) -> dict[bytes, bytes]:
    """A row as the fields of a Redis entry (an unknown kind stays unknown to the decoder)."""
    name = kind.encode()
    return {name if name in (b"e", b"end") else b"kind:" + name: body}


def _lost(run_id: str, why: str) -> RunLostError:
    return RunLostError(f"run {run_id!r} stopped without an end: {why}")
