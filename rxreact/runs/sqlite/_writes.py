"""The owner's side of a :class:`~rxreact.runs.SQLiteEventLog`: one transaction per flush.

The queue, the flush and the retries are :mod:`rxreact.runs._write_queue`'s; here a batch is
one write transaction, with the consecutive events of a run in one ``entries`` row. A park
(:mod:`rxreact.runs.parking`) sets the run's state to ``parked`` with its ``deadline``, and
``woken`` if it was decided since; an unpark sets it back to ``running``. A
checkpoint goes through the same queue, so it shares the transaction of the events around it,
and the run that wrote it may wait for that commit (``on_sent``) before starting the step
that depends on it.

Every write is fenced: a run's rows are written only while the ``runs`` row still names this
owner and token, checked inside the transaction. A transaction the file refused (another
process held the write lock past the timeout) is tried again, unchanged; ``INSERT OR IGNORE``
makes a re-sent row that had been committed a no-op.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from typing import ClassVar

from rxreact.errors import RunError
from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._write_queue import Fence, Item, QueuedRunWriter, Sent, WriteQueue
from rxreact.runs.sqlite._store import Store

__all__ = ["GATHER_S", "Fence", "RunWriterToSQLite", "SQLiteWriteQueue"]

GATHER_S = 0.002
"""Seconds a flush waits, once something is queued, before it commits everything queued
(so a streaming run's chunks share a transaction instead of paying one each)."""


class SQLiteWriteQueue(WriteQueue):
    """Queued writes of one log's runs and the one flush that commits them."""

    store: ClassVar[str] = "SQLite event log"
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(self, store: Store) -> None:
        super().__init__(RunError, "sqlite-event-log", GATHER_S)
        self._store = store

    def _send(self, batch: list[Item]) -> Sent:
        """Write ``batch`` in one transaction, but for the runs whose fence no longer holds."""
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
                    _, _, _conversation, since, deadline, _ = item
                    # A decision made since the park began wakes it at once (transactions
                    # on the file are serialized: decide() sees the park, or it sees it).
                    db.execute(
                        "UPDATE runs SET state = 'parked', deadline = ?, woken = EXISTS ("
                        "SELECT 1 FROM decisions d WHERE d.run_id = runs.run_id AND d.at >= ?) "
                        "WHERE run_id = ? AND state = 'running'",
                        (deadline, since, fence.run_id),
                    )
                elif kind == "unpark":
                    db.execute(
                        "UPDATE runs SET state = 'running', deadline = NULL, woken = 0, "
                        "beat = ? WHERE run_id = ? AND state = 'parked'",
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
        return Sent(refused, [])


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


class RunWriterToSQLite(QueuedRunWriter):
    """A run's writer: the local record first (subscribers here), then the file."""

    __slots__ = ()
