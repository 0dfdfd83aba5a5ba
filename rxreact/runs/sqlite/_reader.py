"""The reader of a :class:`~rxreact.runs.SQLiteEventLog`: one thread per log, for every
follower of the process, every cancel request addressed to it, and its heartbeats.

SQLite has no blocking read, so the thread polls, cheaply: every ``poll`` seconds it asks
``PRAGMA data_version`` (a counter in shared memory that moves when another connection
commits) and reads only when it moved or a follower was added. Idle, with nothing followed
and no run owned, it sleeps until woken. A follower whose inbox is full is left out of reads
until it drains, as with Redis (:mod:`rxreact.runs.redis._reader`), and entries are decoded once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from rxreact.errors import RunError
from rxreact.runs._decisions import Decision
from rxreact.runs._delivery import COUNT, deliver, fail
from rxreact.runs._follower import Follower, FollowerSet
from rxreact.runs._sql_followers import by_run, fields, to_check, verdict
from rxreact.runs.sqlite._store import Store

__all__ = ["SQLiteReader"]

log = logging.getLogger(__name__)


class SQLiteReader(FollowerSet):
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
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + self._beat
                self._guarded("heartbeat", self._heartbeat)
                self._guarded("liveness check", self._check_alive, True)
            elif forced:
                self._guarded("liveness check", self._check_alive, False)
            try:
                with self._store.read("poll") as db:
                    current = db.execute("PRAGMA data_version").fetchone()[0]
            except Exception:  # the one reader every follower relies on must not stop
                log.exception("SQLite event log reader failed; going on in 1 s")
                self._wake.wait(1.0)
                continue
            if current != version or forced:
                version = current
                # Each in its own guard: a failure reading cancels must not starve decisions
                # or followers (each row and each run is guarded again inside).
                self._guarded("cancel requests", self._read_cancels)
                self._guarded("decisions", self._read_decisions)
                self._guarded("entries", self._read_entries)
            wait = min(self._poll, next_beat - time.monotonic())
            if not active and not self._busy():
                wait = next_beat - time.monotonic()
            self._wake.wait(max(wait, 0.0))

    def _guarded(self, what: str, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except Exception:  # logged; the next pass tries again
            log.exception("SQLite event log reader: reading %s failed", what)

    def _read_cancels(self) -> None:
        with self._store.read("read cancels") as db:
            rows = db.execute(
                "SELECT id, run_id FROM cancels WHERE id > ? ORDER BY id", (self._cancel_id,)
            ).fetchall()
        for cancel_id, run_id in rows:
            self._cancel_id = cancel_id
            if not isinstance(run_id, str):
                log.warning("SQLite event log: ignored cancel %s of run %r", cancel_id, run_id)
                continue
            self._guarded(f"cancel {cancel_id}", self._on_cancel, run_id)

    def _read_decisions(self) -> None:
        with self._store.read("read decisions") as db:
            rows = db.execute(
                "SELECT id, run_id, call_id, approved, reason FROM decisions WHERE id > ? "
                "ORDER BY id",
                (self._decision_id,),
            ).fetchall()
        for decision_id, run_id, call_id, approved, reason in rows:
            self._decision_id = decision_id
            decision = Decision.checked(run_id, call_id, approved, reason)
            if decision is None:
                log.warning("SQLite event log: ignored malformed decision %s", decision_id)
                continue
            self._guarded(f"decision {decision_id}", self._on_decision, *decision)

    def _groups(self) -> dict[str, list[Follower]]:
        with self._lock:
            return by_run(list(self._followers))

    def _read_entries(self) -> None:
        for run_id, members in self._groups().items():
            while True:
                try:
                    low = min(f.cursor for f in members)
                    with self._store.read("read events") as db:
                        rows = db.execute(
                            "SELECT seq, kind, body FROM entries WHERE run_id = ? AND seq > ? "
                            "ORDER BY seq LIMIT ?",
                            (run_id, low, COUNT),
                        ).fetchall()
                except Exception as error:  # this run's followers fail, the next runs are read
                    log.exception("SQLite event log: cannot read run %r", run_id)
                    fail(members, RunError(f"cannot read run {run_id!r}: {error}"))
                    break
                if not rows:
                    break
                deliver(run_id, members, [(seq, fields(kind, body)) for seq, kind, body in rows])
                if len(rows) < COUNT or not all(f.wants_more() for f in members):
                    break

    def _check_alive(self, everyone: bool) -> None:
        """Fail the followers of runs that are gone, or whose owner stopped beating longer
        ago than ``gone_after`` (a lost run nobody resumed)."""
        with self._lock:
            followers = to_check(self._followers, everyone)
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
            try:
                said = verdict(follower, self._judged(rows.get(follower.run_id), now))
            except Exception as error:  # a runs row of another shape: this run's followers fail
                log.exception("SQLite event log: unreadable state of run %r", follower.run_id)
                said = RunError(f"unreadable state of run {follower.run_id!r}: {error}")
            if said is not None:
                fail([follower], said)
            follower.checked_at = now

    def _judged(self, row: Any, now: float) -> tuple[Any, bool, Any] | None:
        """A ``(state, beat, info)`` row as :func:`verdict` takes it (raises on a beat that
        is not a number)."""
        if row is None:
            return None
        state, beat, info = row
        return state, state == "running" and beat < now - self._gone_after, info
