"""``SQLiteEventLog``: hot runs shared by the processes of one machine, in one SQLite file.

The embedded durable log: what :class:`~rxreact.runs.RedisEventLog` does across machines, this
does across the processes of one host with nothing to run beside them (several ``rxreact
serve`` workers, a CLI and a notebook on one file). Its tables are described in
:mod:`rxreact.runs.sqlite._store`.

The owner writes in the background (:mod:`rxreact.runs.sqlite._writes`): ``append`` queues,
and one transaction at a time commits everything queued so far, so a chunk costs a share of
one commit. Readers in this process are served from memory; other processes poll the file
from one reader thread per log (:mod:`rxreact.runs.sqlite._reader`). The owner's heartbeat is
the ``beat`` column of its runs, renewed every ``lost_after / 3`` seconds. The runs of this
process are kept as the Postgres log keeps them (:mod:`rxreact.runs._owned_runs`); what is
here is what touches the file.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import ClassVar

from reactivex import abc

from rxreact.errors import RunError
from rxreact.runs._owned_runs import OwnedRuns, positive
from rxreact.runs._write_queue import QueuedRunWriter
from rxreact.runs.base import RunWriter
from rxreact.runs.sqlite._decisions import record_decision
from rxreact.runs.sqlite._reader import SQLiteReader
from rxreact.runs.sqlite._store import Store
from rxreact.runs.sqlite._takeover import claim_lost, give_up
from rxreact.runs.sqlite._writes import RunWriterToSQLite, SQLiteWriteQueue
from rxreact.runs.takeover import LostRun

__all__ = ["SQLiteEventLog"]

log: logging.Logger = logging.getLogger(__name__)


class SQLiteEventLog(OwnedRuns):
    """Runs' events in a SQLite file: follow, replay and cancel a run from any process of
    this machine.

    A run that stops beating (its process died) counts as gone after ``lost_after`` seconds:
    :meth:`active_run` forgets it, and another process may resume it
    (``agent.resume_runs()``). A follower gets :class:`~rxreact.RunLostError` only when
    ``lost_after + takeover_timeout`` seconds passed and no process took it over.

    Args:
        path: the database file (created when missing; its directory must exist). Use a
            file of its own, not the chat memory's.
        lost_after: seconds without a heartbeat after which the owner counts as gone.
        takeover_timeout: seconds after that for another process to resume the run before
            its followers give up.
        ttl: seconds a finished run stays readable (then its rows are deleted).
        max_runs: finished runs of this process kept in its memory for local subscribers.
        poll: seconds between two looks at the file by the reader thread (while anything is
            followed or owned): the latency of a follower in another process.
        timeout: seconds a write waits for another process's write lock.
        scheduler: where subscribers receive events when they subscribe without a scheduler.

    Raises:
        RunError: the file cannot be opened, or is not an event log of this rxreact.
    """

    _writer: ClassVar[type[QueuedRunWriter]] = RunWriterToSQLite

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        lost_after: float = 30.0,
        takeover_timeout: float = 60.0,
        ttl: float = 3600.0,
        max_runs: int = 1000,
        poll: float = 0.02,
        timeout: float = 5.0,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self._set_times(lost_after, takeover_timeout, ttl)
        self.owner: str = uuid.uuid4().hex
        self._store = Store.open(path, timeout, self.lost_after)
        self.path: str = self._store.path
        self._keep_runs(SQLiteWriteQueue(self._store), max_runs, self.ttl, scheduler)
        self._reader = SQLiteReader(
            self._store.sibling(),
            poll=positive(poll, "poll"),
            beat=self.lost_after / 3,
            gone_after=self.lost_after + self.takeover_timeout,
            busy=lambda: bool(self._owned),
            on_cancel=self._cancel_requested,
            heartbeat=self._heartbeat,
            on_decision=self._appliers.decided,
        )

    def __repr__(self) -> str:
        return f"SQLiteEventLog({self.path!r}, lost_after={self.lost_after:g})"

    # -- the owner's side -------------------------------------------------------------------

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run of this process: visible to :meth:`active_run` and followers at once.

        Raises:
            RunError: the file could not be written.
        """

        def insert() -> None:
            now = time.time()
            with self._store.write("begin a run") as db:
                db.execute(
                    "INSERT INTO runs (run_id, conversation_id, owner, token, state, started, "
                    "beat, lost_after) VALUES (?, ?, ?, 1, 'running', ?, ?, ?)",
                    (run_id, conversation_id, self.owner, now, now, self.lost_after),
                )

        return self._begin(run_id, conversation_id, cancel, insert)

    # -- taking over lost runs (rxreact.runs.takeover) -----------------------------------------

    def claim_lost(self, limit: int = 100) -> list[LostRun]:
        """Claim up to ``limit`` runs whose owner stopped beating ``lost_after`` seconds ago;
        of several processes claiming at once, each run goes to exactly one."""
        self._reader.ensure_started()  # the claimed runs' beats go on from here
        return claim_lost(self._store, self.owner, self.lost_after, limit)

    def give_up(self, lost: LostRun, reason: str) -> None:
        """Mark a claimed run lost for good; its followers get ``RunLostError(reason)``."""
        give_up(self._store, lost, reason)

    def _heartbeat(self) -> None:
        """Renew this process's running runs, and delete finished runs past ``ttl`` (called
        by the reader thread every ``lost_after / 3`` seconds)."""
        run_ids, tokens = self._owned_tokens()
        now = time.time()
        with self._store.write("renew runs") as db:
            db.executemany(
                "UPDATE runs SET beat = ? WHERE run_id = ? AND owner = ? AND token = ? "
                "AND state IN ('running', 'parked')",
                [
                    (now, run_id, self.owner, token)
                    for run_id, token in zip(run_ids, tokens, strict=True)
                ],
            )
            expired = [
                row[0]
                for row in db.execute(
                    "SELECT run_id FROM runs WHERE state IN ('ended', 'lost') AND ended_at < ? "
                    "LIMIT 500",
                    (now - self.ttl,),
                ).fetchall()
            ]
            for table in ("entries", "checkpoints", "runs"):
                db.executemany(f"DELETE FROM {table} WHERE run_id = ?", [(r,) for r in expired])
            db.execute("DELETE FROM cancels WHERE at < ?", (now - 3600.0,))

    # -- anyone's side ----------------------------------------------------------------------

    def active_run(self, conversation_id: str) -> str | None:
        """The oldest running (or parked) run on ``conversation_id`` in any process, or
        ``None``."""
        with self._store.read("find the active run") as db:
            row = db.execute(
                "SELECT run_id FROM runs WHERE conversation_id = ? AND (state = 'parked' OR "
                "(state = 'running' AND beat > ?)) ORDER BY started, rowid LIMIT 1",
                (conversation_id, time.time() - self.lost_after),
            ).fetchone()
        return None if row is None else str(row[0])

    def request_cancel(self, run_id: str) -> None:
        """Cancel the run, here if this process owns it, else through the owner's reader."""
        if self._cancel_here(run_id):
            return
        with self._store.write("request a cancel") as db:
            db.execute("INSERT INTO cancels (run_id, at) VALUES (?, ?)", (run_id, time.time()))

    # -- approvals from any process -------------------------------------------------------------

    def decide(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> None:
        """Approve or deny a tool call of a run that waits for approval, from any process:
        the first decision is recorded and its owner applies it once.

        Raises:
            ApprovalDecisionError: no such call waits (unknown, decided already, run ended).
        """
        self._flush_if_owned(run_id)
        record_decision(self._store, run_id, call_id, approved, reason)
        self._reader.wake()

    def close(self) -> None:
        """Commit what is queued (:meth:`flush`), stop the reader thread, close the file.

        Parked runs of this process are let go: a decision on one is applied by whichever
        process resumes it next, without waiting ``lost_after``."""
        self.flush()
        self._reader.close()
        run_ids, tokens = self._owned_tokens()
        try:
            with self._store.write("let parked runs go") as db:
                db.executemany(
                    "UPDATE runs SET beat = 0 WHERE run_id = ? AND owner = ? AND token = ? "
                    "AND state = 'parked'",
                    [
                        (run_id, self.owner, token)
                        for run_id, token in zip(run_ids, tokens, strict=True)
                    ],
                )
        except RunError as error:  # they will count as gone after lost_after instead
            log.warning("SQLite event log: could not let parked runs go: %s", error)
        self._store.close()
