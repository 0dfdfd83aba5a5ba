"""The reader of a :class:`~rxreact.runs.SQLiteEventLog`: one thread per log, for every
follower of the process, every cancel request addressed to it, and its heartbeats.

SQLite has no blocking read, so the thread polls, cheaply: every ``poll`` seconds it asks
``PRAGMA data_version`` (a counter in shared memory that moves when another connection
commits) and reads only when it moved or a follower was added. Idle, with nothing followed
and no run owned, it sleeps until woken. A follower whose inbox is full is left out of reads
until it drains, as with Redis (:mod:`rxreact.runs._hub`), and entries are decoded once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from rxreact.errors import RunError, RunLostError, RunNotFoundError
from rxreact.runs._entries import decode_entry
from rxreact.runs._follower import Follower, Item
from rxreact.runs._hub import COUNT
from rxreact.runs._sqlite_store import Store

__all__ = ["SQLiteReader"]

log = logging.getLogger(__name__)


class SQLiteReader:
    """The reader thread (started on first use) and what it reads for."""

    def __init__(
        self,
        store: Store,
        *,
        poll: float,
        beat: float,
        gone_after: float,
        busy: Callable[[], bool],
        on_cancel: Callable[[str], None],
        heartbeat: Callable[[], None],
        on_decision: Callable[[str, str, bool, str | None], None],
    ) -> None:
        self._store = store
        self._poll = poll
        self._beat = beat
        self._gone_after = gone_after  # seconds without a beat before followers give up
        self._busy = busy  # does this process own runs (so cancels must be polled)?
        self._on_cancel = on_cancel
        self._on_decision = on_decision
        self._decision_id = 0
        self._heartbeat = heartbeat
        self._lock = threading.Lock()
        self._followers: set[Follower] = set()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        self._closed = False
        self._cancel_id = 0

    def ensure_started(self) -> None:
        """Start the thread (once); cancel requests made after this returns are seen."""
        with self._lock:
            if self._thread is not None or self._closed:
                return
            with self._store.read("read cancels") as db:
                self._cancel_id = db.execute("SELECT COALESCE(MAX(id), 0) FROM cancels").fetchone()[
                    0
                ]
                self._decision_id = db.execute(
                    "SELECT COALESCE(MAX(id), 0) FROM decisions"
                ).fetchone()[0]
            self._thread = threading.Thread(
                target=self._loop, name="rxreact-sqlite-event-log", daemon=True
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
        self._wake.set()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(10)
        self._store.close()

    # -- the thread ---------------------------------------------------------------------------

    def _loop(self) -> None:
        version = -1
        next_beat = time.monotonic()
        while True:
            with self._lock:
                if self._closed:
                    return
                active = bool(self._followers)
            forced = self._wake.is_set()
            self._wake.clear()
            try:
                now = time.monotonic()
                if now >= next_beat:
                    self._heartbeat()
                    self._check_alive(everyone=True)
                    next_beat = now + self._beat
                elif forced:
                    self._check_alive(everyone=False)
                with self._store.read("poll") as db:
                    current = db.execute("PRAGMA data_version").fetchone()[0]
                if current != version or forced:
                    version = current
                    self._read_cancels()
                    self._read_decisions()
                    self._read_entries()
            except Exception:  # the one reader every follower relies on must not stop
                log.exception("SQLite event log reader failed; going on in 1 s")
                self._wake.wait(1.0)
                continue
            wait = min(self._poll, next_beat - time.monotonic())
            if not active and not self._busy():
                wait = next_beat - time.monotonic()
            self._wake.wait(max(wait, 0.0))

    def _read_cancels(self) -> None:
        with self._store.read("read cancels") as db:
            rows = db.execute(
                "SELECT id, run_id FROM cancels WHERE id > ? ORDER BY id", (self._cancel_id,)
            ).fetchall()
        for cancel_id, run_id in rows:
            self._cancel_id = cancel_id
            self._on_cancel(run_id)

    def _read_decisions(self) -> None:
        with self._store.read("read decisions") as db:
            rows = db.execute(
                "SELECT id, run_id, call_id, approved, reason FROM decisions WHERE id > ? "
                "ORDER BY id",
                (self._decision_id,),
            ).fetchall()
        for decision_id, run_id, call_id, approved, reason in rows:
            self._decision_id = decision_id
            self._on_decision(run_id, call_id, bool(approved), reason)

    def _groups(self) -> dict[str, list[Follower]]:
        with self._lock:
            followers = list(self._followers)
        groups: dict[str, list[Follower]] = {}
        for follower in followers:
            if follower.wants_more():
                groups.setdefault(follower.run_id, []).append(follower)
        return groups

    def _read_entries(self) -> None:
        for run_id, members in self._groups().items():
            while True:
                low = min(f.cursor for f in members)
                with self._store.read("read events") as db:
                    rows = db.execute(
                        "SELECT seq, kind, body FROM entries WHERE run_id = ? AND seq > ? "
                        "ORDER BY seq LIMIT ?",
                        (run_id, low, COUNT),
                    ).fetchall()
                if not rows:
                    break
                self._dispatch(run_id, members, rows)
                if len(rows) < COUNT or not all(f.wants_more() for f in members):
                    break

    @staticmethod
    def _dispatch(run_id: str, members: list[Follower], rows: list[tuple[int, str, bytes]]) -> None:
        decoded: list[Item]
        try:
            decoded = [
                item
                for seq, kind, body in rows
                for item in decode_entry(seq, {b"e" if kind == "e" else b"end": body})
            ]
        except ValueError as error:
            decoded = [RunError(f"unreadable entry of run {run_id!r}: {error}")]
        last = rows[-1][0]
        for follower in members:
            cursor = follower.cursor
            mine: list[Item] = [i for i in decoded if isinstance(i, Exception) or i.seq > cursor]
            follower.cursor = max(cursor, last)
            if mine:
                follower.push(mine)

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
        run_ids = sorted({f.run_id for f in followers})
        now = time.time()
        with self._store.read("check runs") as db:
            rows = {
                row[0]: row[1:]
                for run_id in run_ids
                for row in db.execute(
                    "SELECT run_id, state, beat, info FROM runs WHERE run_id = ?", (run_id,)
                ).fetchall()
            }
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
                state, beat, info = row
                if state == "lost":
                    verdict = _lost(follower.run_id, info or "it cannot be resumed")
                elif state == "running" and beat < now - self._gone_after:
                    verdict = _lost(follower.run_id, "its process is gone and none resumed it")
                follower.seen_running = follower.seen_running or state in _LIVE
            if verdict is not None:
                follower.push([verdict])
            follower.checked_at = now


_LIVE = ("running", "parked")  # a parked run is waiting for people, not gone


def _lost(run_id: str, why: str) -> RunLostError:
    return RunLostError(f"run {run_id!r} stopped without an end: {why}")
