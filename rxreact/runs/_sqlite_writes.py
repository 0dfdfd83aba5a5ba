"""The owner's side of a :class:`~rxreact.runs.SQLiteEventLog`: writes queued, one transaction
per flush.

As with Redis (:mod:`rxreact.runs._writes`), ``append`` queues the event and returns, and one
flush at a time sends everything queued so far, from every run of the process: here one
write transaction, with the consecutive events of a run in one ``entries`` row. A checkpoint
goes through the same queue, so it shares the transaction of the events around it, and the
run that wrote it may wait for that commit (:meth:`SQLiteWriteQueue.put`'s ``on_sent``)
before starting the step that depends on it.

Every write is fenced: a run's rows are written only while the ``runs`` row still names this
owner and token. A process that was only paused, whose run another process took over, finds
its writes refused (and its run told so) instead of interleaving them with the new owner's.
A transaction the file refused (another process held the write lock past the timeout) is
tried again, unchanged, after :data:`~rxreact.runs._writes.RETRY_WAITS`; ``INSERT OR IGNORE``
makes a re-sent row that had been committed a no-op.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reactivex import abc

from rxreact.errors import RunError
from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._record import RunRecord
from rxreact.runs._sqlite_store import Store
from rxreact.runs._writes import RETRY_WAITS
from rxreact.scheduling import shared_scheduler

__all__ = ["GATHER_S", "Fence", "RunWriterToSQLite", "SQLiteWriteQueue"]

log = logging.getLogger(__name__)

GATHER_S = 0.002
"""Seconds a flush waits, once something is queued, before it commits everything queued
(so a streaming run's chunks share a transaction instead of paying one each)."""


@dataclass(eq=False)
class Fence:
    """Who may write a run: its owner and token, and what to do once they may not."""

    run_id: str
    owner: str
    token: int
    on_fenced: Callable[[], None]
    fenced: bool = False
    checkpoints: int = 0  # checkpoints written so far (the next one's n)
    last_seq: int = field(default=0)


class SQLiteWriteQueue:
    """Queued writes of one log's runs and the one flush that commits them."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending: deque[tuple[Any, ...]] = deque()
        self._flushing = False
        self._failed: list[tuple[Any, ...]] | None = None
        self._tries = 0
        self.retry_waits: tuple[float, ...] = RETRY_WAITS
        self.scheduler: abc.SchedulerBase = shared_scheduler("sqlite-event-log", 2)

    def put(self, item: tuple[Any, ...], on_sent: Callable[[bool], None] | None = None) -> None:
        """Queue ``("e", fence, event)``, ``("ckpt", fence, body)``,
        ``("park", fence, since, deadline)``, ``("unpark", fence)`` or
        ``("end", fence, conversation_id, seq, error)``; ``on_sent(committed)`` is called
        once the transaction holding it committed (True) or was given up (False)."""
        with self._lock:
            self._pending.append((*item, on_sent))
            if self._flushing:
                return
            self._flushing = True
        # A commit costs far more than a pipeline send: wait GATHER_S for more to share it.
        self.scheduler.schedule_relative(GATHER_S, self._flush)

    def wait_sent(self, timeout: float | None) -> bool:
        """Wait until everything queued so far was written; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._flushing, timeout)

    def _flush(self, _: abc.SchedulerBase, __: Any = None) -> None:
        while True:
            with self._lock:
                batch, self._failed = self._failed, None
                if batch is None:
                    if not self._pending:
                        self._flushing = False
                        self._idle.notify_all()
                        return
                    batch = list(self._pending)
                    self._pending.clear()
                    self._tries = 0
            try:
                fenced = self._commit(batch)
            except RunError as error:
                if self._tries < len(self.retry_waits):
                    with self._lock:
                        self._failed = batch
                    wait = self.retry_waits[self._tries]
                    self._tries += 1
                    log.info("SQLite event log: writing %d items again: %s", len(batch), error)
                    self.scheduler.schedule_relative(wait, self._flush)
                    return
                log.warning("SQLite event log: %d writes failed: %s", len(batch), error)
                _settle(batch, False)
                continue
            for fence in fenced:
                if not fence.fenced:
                    fence.fenced = True
                    log.warning(
                        "SQLite event log: run %s has another owner now; this process stops it",
                        fence.run_id,
                    )
                    fence.on_fenced()
            _settle(batch, True, {id(f) for f in fenced})

    def _commit(self, batch: list[tuple[Any, ...]]) -> list[Fence]:
        """Write ``batch`` in one transaction; the fences that no longer hold."""
        fences = {id(item[1]): item[1] for item in batch}
        with self._store.write("write run events") as db:
            refused = [f for f in fences.values() if not _holds(db, f)]
            skip = {id(f) for f in refused}
            events: dict[int, list[AgentEvent]] = {}
            for item in batch:
                fence: Fence = item[1]
                if id(fence) in skip:
                    continue
                kind = item[0]
                if kind == "e":
                    events.setdefault(id(fence), []).append(item[2])
                    continue
                _add_events(db, fence.run_id, events.pop(id(fence), []))
                if kind == "park":
                    _, _, since, deadline, _ = item
                    db.execute(
                        "UPDATE runs SET state = 'parked', info = ? WHERE run_id = ? "
                        "AND state = 'running'",
                        (json.dumps({"since": since, "deadline": deadline}), fence.run_id),
                    )
                elif kind == "unpark":
                    db.execute(
                        "UPDATE runs SET state = 'running', info = NULL, beat = ? "
                        "WHERE run_id = ? AND state = 'parked'",
                        (time.time(), fence.run_id),
                    )
                elif kind == "ckpt":
                    db.execute(
                        "INSERT OR IGNORE INTO checkpoints (run_id, n, seq, body) "
                        "VALUES (?, ?, ?, ?)",
                        (fence.run_id, item[3], item[4], item[2]),
                    )
                else:
                    _, _, _conversation, seq, error, _ = item
                    db.execute(
                        "INSERT OR IGNORE INTO entries (run_id, seq, kind, body) "
                        "VALUES (?, ?, 'end', ?)",
                        (fence.run_id, seq, encode_end(error).encode()),
                    )
                    db.execute(
                        "UPDATE runs SET state = 'ended', ended_at = ? WHERE run_id = ?",
                        (time.time(), fence.run_id),
                    )
            for key, pending in events.items():
                _add_events(db, fences[key].run_id, pending)
        return refused


def _holds(db: sqlite3.Connection, fence: Fence) -> bool:
    row = db.execute("SELECT owner, token FROM runs WHERE run_id = ?", (fence.run_id,)).fetchone()
    return row is not None and row[0] == fence.owner and row[1] == fence.token


def _add_events(db: sqlite3.Connection, run_id: str, events: list[AgentEvent]) -> None:
    for start in range(0, len(events), MAX_BATCH):
        part = events[start : start + MAX_BATCH]
        db.execute(
            "INSERT OR IGNORE INTO entries (run_id, seq, kind, body) VALUES (?, ?, 'e', ?)",
            (run_id, part[-1].seq, encode_events(part)),
        )


def _settle(batch: list[tuple[Any, ...]], committed: bool, refused: set[int] | None = None) -> None:
    for item in batch:
        on_sent = item[-1]
        if on_sent is not None:
            on_sent(committed and id(item[1]) not in (refused or set()))


class RunWriterToSQLite:
    """A run's writer: the local record first (subscribers here), then the write queue.

    It can park its run (:mod:`rxreact.runs.parking`): the next event, checkpoint or end
    after :meth:`park` first queues the unpark, so the file never says "parked" about a run
    that went on.
    """

    __slots__ = (
        "_ended",
        "_fence",
        "_lock",
        "_on_end",
        "_park_next",
        "_queue",
        "_record",
        "parked",
    )

    def __init__(
        self,
        queue: SQLiteWriteQueue,
        record: RunRecord,
        fence: Fence,
        on_end: Callable[[RunRecord], None],
    ) -> None:
        self._queue = queue
        self._record = record
        self._fence = fence
        self._on_end = on_end
        self._lock = threading.Lock()
        self._ended = False
        self.parked = False
        """True from :meth:`park` until the run goes on (see the class docstring)."""
        self._park_next: float | bool | None = False  # park after the next event: its deadline

    def append(self, event: AgentEvent) -> None:
        """Add the next event here and queue it for the file."""
        with self._lock:
            if self._ended:
                return
            if self.parked:
                self._unpark(None)
            self._fence.last_seq = event.seq
            self._queue.put(("e", self._fence, event))
            if self._park_next is not False:
                deadline, self._park_next = self._park_next, False
                self.parked = True
                self._queue.put(("park", self._fence, time.time(), deadline))
            # After the queue: a subscriber here that saw the event can flush() the park too.
            self._record.append(event)

    def checkpoint(self, body: bytes, on_sent: Callable[[bool], None]) -> None:
        """Queue a checkpoint after the events so far (same transaction as those queued with
        it)."""
        with self._lock:
            if self._ended:
                on_sent(False)
                return
            if self.parked:
                self._unpark(None)
            fence = self._fence
            self._queue.put(("ckpt", fence, body, fence.checkpoints, fence.last_seq), on_sent)
            fence.checkpoints += 1

    def park(self, deadline: float | None) -> None:
        """Park the run right after the next event (the one that leaves it waiting only for
        approvals), until ``deadline``."""
        with self._lock:
            if not self._ended:
                self._park_next = deadline

    def unpark(self, on_sent: Callable[[bool], None]) -> None:
        """Queue "running again" if parked; ``on_sent(committed)`` once written (at once,
        True, when not parked: nothing to wait for; False once the run ended)."""
        with self._lock:
            if self.parked and not self._ended:
                self._unpark(on_sent)
                return
            ended = self._ended
        on_sent(not ended)

    def _unpark(self, on_sent: Callable[[bool], None] | None) -> None:
        self.parked = False
        self._queue.put(("unpark", self._fence), on_sent)

    def end(self, error: Exception | None = None) -> None:
        """End the run here and queue its end marker (row ``last seq + 1``)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            record = self._record
            self._on_end(record)
            record.end(error)
            fence = self._fence
            self._queue.put(("end", fence, record.conversation_id, fence.last_seq + 1, error))
