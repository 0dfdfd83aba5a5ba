"""The owner's side of a :class:`~rxreact.runs.postgres.PostgresEventLog`: one short
transaction per flush.

The queue, the flush and the retries are :mod:`rxreact.runs._write_queue`'s; here a batch is
one transaction of a few statements whatever it carries: the runs' rows locked (in ``run_id``
order, so two flushes never deadlock) and their fences checked, every event entry of every run
in one ``INSERT ... SELECT FROM unnest(...)``, the checkpoints likewise, then the few state
changes (park, unpark, end) in queue order, and one ``pg_notify`` per run written, delivered
by the server at commit. A checkpoint shares the transaction of the events around it, and the
run that wrote it may wait for that commit (``on_sent``) before the step that depends on it.

A transaction the server did not take (a lost connection, a lock held past ``lock_timeout``)
is tried again unchanged; ``ON CONFLICT DO NOTHING`` makes a re-sent row that had been
committed a no-op.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from rxreact._postgres import PostgresPool
from rxreact.errors import RunError
from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._write_queue import Item, QueuedRunWriter, Sent, WriteQueue

__all__ = ["GATHER_S", "PostgresWriteQueue", "RunWriterToPostgres"]

GATHER_S = 0.002
"""Seconds a flush waits, once something is queued, before it commits everything queued (so
a streaming run's chunks share a transaction instead of paying one each)."""


class _Rows:
    """The rows of one batch, gathered by table."""

    def __init__(self) -> None:
        self.entries: tuple[list[str], list[int], list[str], list[bytes]] = ([], [], [], [])
        self.checkpoints: tuple[list[str], list[int], list[int], list[bytes]] = ([], [], [], [])
        self.changes: list[tuple[str, tuple[Any, ...]]] = []  # in queue order
        self.notify: set[str] = set()

    def events(self, run_id: str, events: list[AgentEvent]) -> None:
        for start in range(0, len(events), MAX_BATCH):
            part = events[start : start + MAX_BATCH]
            self.entry(run_id, part[-1].seq, "e", encode_events(part))

    def entry(self, run_id: str, seq: int, kind: str, body: bytes) -> None:
        for column, value in zip(self.entries, (run_id, seq, kind, body), strict=True):
            column.append(value)  # type: ignore[attr-defined]
        self.notify.add(run_id)


class PostgresWriteQueue(WriteQueue):
    """Queued writes of one log's runs and the one flush that commits them."""

    store: ClassVar[str] = "Postgres event log"
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(
        self, db: PostgresPool, sql: dict[str, str], channel: str, lost_after: float
    ) -> None:
        super().__init__(RunError, "postgres-event-log", GATHER_S)
        self._db = db
        self._sql = sql
        self._channel = channel
        self._lost_after = lost_after

    def _send(self, batch: list[Item]) -> Sent:
        """Write ``batch`` in one transaction, but for the runs whose fence no longer holds."""
        fences = {id(item[1]): item[1] for item in batch}
        sql = self._sql
        with self._db.transaction("write run events") as cur:
            cur.execute(sql["lock"], (sorted({f.run_id for f in fences.values()}),))
            rows = {run_id: (owner, token) for run_id, owner, token in cur.fetchall()}
            refused = [f for f in fences.values() if rows.get(f.run_id) != (f.owner, f.token)]
            skip = {id(f) for f in refused}
            gathered = self._gather([item for item in batch if id(item[1]) not in skip])
            if gathered.entries[0]:
                cur.execute(sql["entries"], gathered.entries)
            if gathered.checkpoints[0]:
                cur.execute(sql["checkpoints"], gathered.checkpoints)
            for name, args in gathered.changes:
                cur.execute(sql[name], args)
            if gathered.notify:
                cur.execute(sql["notify"], (self._channel, sorted(gathered.notify)))
        return Sent(refused, [])

    def _gather(self, batch: list[Item]) -> _Rows:
        rows = _Rows()
        events: dict[int, list[AgentEvent]] = {}  # per run, the events not yet in an entry
        for item in batch:
            kind, fence = item[0], item[1]
            run_id: str = fence.run_id
            if kind == "e":
                events.setdefault(id(fence), []).append(item[2])
                continue
            rows.events(run_id, events.pop(id(fence), []))
            if kind == "ckpt":
                for column, value in zip(
                    rows.checkpoints, (run_id, item[3], item[4], item[2]), strict=True
                ):
                    column.append(value)  # type: ignore[attr-defined]
            elif kind == "park":
                rows.changes.append(("park", (item[4], run_id)))
                rows.notify.add(run_id)
            elif kind == "unpark":
                rows.changes.append(("unpark", (self._lost_after, run_id)))
            else:
                _, _, _conversation, seq, error, _ = item
                rows.entry(run_id, seq, "end", encode_end(error).encode())
                rows.changes.append(("end", (run_id,)))
        fences = {id(item[1]): item[1] for item in batch}
        for key, pending in events.items():
            rows.events(fences[key].run_id, pending)
        return rows


class RunWriterToPostgres(QueuedRunWriter):
    """A run's writer: the local record first (subscribers here), then the database."""

    __slots__ = ()
