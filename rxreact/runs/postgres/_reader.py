"""The reader of a :class:`~rxreact.runs.postgres.PostgresEventLog`: one thread per log, for
every follower of the process, every cancel and decision addressed to it, and its heartbeats.

**Woken by LISTEN/NOTIFY.** With a ``listen_dsn`` the log listens on its channel through
the process's one listening connection to that DSN, shared by every log of the process
(:mod:`rxreact.runs.postgres._listen`), which wakes this thread. Every commit another process
makes for a run (events, a park, a cancel, a decision) notifies it, and one round of reads
serves every follower of the log: one query for the entries of every followed run
(``unnest`` of their cursors), one for the new cancels and decisions. So a process following
20 runs, in one log or several on one pool, holds the pool's connections plus one.
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
from rxreact.runs._delivery import COUNT, deliver, fail
from rxreact.runs._follower import Follower, FollowerSet
from rxreact.runs._sql_followers import by_run, fields, to_check, verdict
from rxreact.runs.postgres._listen import Listening, listen

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


class PostgresReader(FollowerSet):
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
        self._listen_dsn = listen_dsn
        self._channel = channel
        self._listening: Listening | None = None
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
        self._forced = False  # a wake(): read everything, whatever the notifications said
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
            if self._listen_dsn is not None:  # listening before this returns
                self._listening = listen(
                    self._listen_dsn, self._channel, self._db.psycopg, self._notified
                )
            self._thread = threading.Thread(
                target=self._loop, name="rxreact-postgres-event-log", daemon=True
            )
            self._thread.start()

    def wake(self) -> None:
        """Read everything at once (a follower came, a decision was made here)."""
        self._forced = True
        self._notified()

    def _notified(self) -> None:
        """Read what the notifications that arrived ask for."""
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
        if self._listening is not None:
            self._listening.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    # -- the thread ---------------------------------------------------------------------------

    def _wait(self, seconds: float) -> _Woken:
        """Wait for a wake-up, a notification or ``seconds``: what there is to read."""
        ready, _, _ = select.select([self._wake_r], [], [], max(seconds, 0.0))
        if ready:
            os.read(self._wake_r, 4096)
        forced, self._forced = self._forced, False
        listening = self._listening
        payloads = None if listening is None else listening.take()
        if forced or listening is None or payloads is None or not listening.connected:
            return _EVERYTHING  # (not listening: every wait is a poll)
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
            listening = self._listening is not None and self._listening.connected
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
            return by_run(list(self._followers))

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
                deliver(run_id, members, [(seq, fields(kind, body)) for seq, kind, body in entries])
                if len(entries) == COUNT and all(f.wants_more() for f in members):
                    more[run_id] = members
            groups = more

    def _check_alive(self, everyone: bool) -> None:
        """Fail the followers of runs that are gone, or whose owner stopped beating longer
        ago than ``gone_after`` (a lost run nobody resumed)."""
        with self._lock:
            followers = to_check(self._followers, everyone)
        if not followers:
            return
        with self._db.read("check runs") as cur:
            cur.execute(
                self._sql["alive"], (self._gone_after, sorted({f.run_id for f in followers}))
            )
            rows = {row[0]: row[1:] for row in cur.fetchall()}
        now = time.time()
        for follower in followers:
            said = verdict(follower, rows.get(follower.run_id))
            if said is not None:
                fail([follower], said)
            follower.checked_at = now
