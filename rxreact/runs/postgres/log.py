"""``PostgresEventLog``: hot runs shared by every process and host on one PostgreSQL database.

What :class:`~rxreact.runs.SQLiteEventLog` does for the processes of one machine and
:class:`~rxreact.runs.RedisEventLog` on one Redis node, on the database most teams already
run: follow, replay, cancel, decide and resume a run from any process of any host. The tables
and their SQL are in :mod:`rxreact.runs.postgres._store`.

The owner writes in the background (:mod:`rxreact.runs.postgres._writes`): ``append`` queues,
and one short transaction at a time commits everything queued so far, so a chunk costs a
share of one commit. Readers in this process are served from memory; other processes read
from one reader thread per log, woken by ``LISTEN/NOTIFY`` or polling
(:mod:`rxreact.runs.postgres._reader`). The owner's heartbeat renews the ``lapse`` of its runs
every ``lost_after / 3`` seconds. The runs of this process are kept as the SQLite log keeps
them (:mod:`rxreact.runs._owned_runs`); what is here is what touches the database.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, ClassVar

from reactivex import abc

from rxreact._postgres import PostgresPool, check_prefix
from rxreact.errors import RunError
from rxreact.runs._owned_runs import OwnedRuns, positive
from rxreact.runs._write_queue import QueuedRunWriter
from rxreact.runs.base import RunWriter
from rxreact.runs.postgres._reader import NOTICES, PostgresReader
from rxreact.runs.postgres._store import CREATE, MIGRATIONS, SCHEMA_VERSION, SQL, TABLES
from rxreact.runs.postgres._takeover import claim_lost, give_up, record_decision
from rxreact.runs.postgres._writes import PostgresWriteQueue, RunWriterToPostgres
from rxreact.runs.takeover import LostRun

__all__ = ["PostgresEventLog"]

log: logging.Logger = logging.getLogger(__name__)

RETENTION_BATCH = 500
"""Ended runs deleted per heartbeat at most (with their entries, checkpoints, decisions)."""


class PostgresEventLog(OwnedRuns):
    """Runs' events in PostgreSQL: follow, replay, cancel and resume a run from any process.

    A run whose owner stops beating (its process died) counts as gone after ``lost_after``
    seconds: :meth:`active_run` forgets it, and another process may resume it
    (``agent.resume_runs()``). A follower gets :class:`~rxreact.RunLostError` only when
    ``lost_after + takeover_timeout`` seconds passed and no process took it over.

    **Connections.** A DSN builds a pool this log owns and closes; a
    ``psycopg_pool.ConnectionPool`` passed in is the caller's and stays open (rxreact sets
    what it needs on each connection and transaction). Every write is one short transaction
    (``lock_timeout`` and ``idle_in_transaction_session_timeout`` set in it), nothing is
    prepared, no session state is kept: it works behind PgBouncer in transaction mode.

    **Wake-ups.** With ``listen_dsn`` (a *direct* connection to the server, not through a
    transaction pooler, which does not pass ``LISTEN`` on) one connection per process and
    ``listen_dsn``, shared by every log of the process, listens for the logs' notifications and
    wakes their reader threads; without it the reader polls every
    ``poll`` seconds while this process follows or owns a run, and still sees every event.

    Args:
        dsn_or_pool: a DSN (``postgresql://user@host:5432/db``) or a
            ``psycopg_pool.ConnectionPool``.
        lost_after: seconds without a heartbeat after which the owner counts as gone.
        takeover_timeout: seconds after that for another process to resume the run before
            its followers give up.
        listen_dsn: a direct connection for ``LISTEN`` (see above); ``None``: poll.
        table_prefix: the start of every table name, to share a database with others.
        ttl: seconds a finished run stays readable (then it is deleted, in batches).
        max_runs: finished runs of this process kept in its memory for local subscribers.
        poll: seconds between two reads of the reader thread when it does not listen.
        min_size: connections an owned pool keeps open.
        max_size: connections an owned pool may grow to under load (default ``min_size``: a
            process holds ``min_size`` connections, plus one to listen).
        scheduler: where subscribers receive events when they subscribe without a scheduler.

    Raises:
        ConfigurationError: psycopg is not installed (``pip install 'rxreact[postgres]'``).
        RunError: the database cannot be reached, or its tables are not an event log of this
            rxreact.
    """

    _writer: ClassVar[type[QueuedRunWriter]] = RunWriterToPostgres

    def __init__(
        self,
        dsn_or_pool: Any,
        *,
        lost_after: float = 30.0,
        takeover_timeout: float = 60.0,
        listen_dsn: str | None = None,
        table_prefix: str = "rxreact_",
        ttl: float = 3600.0,
        max_runs: int = 1000,
        poll: float = 0.05,
        min_size: int = 4,
        max_size: int | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self._set_times(lost_after, takeover_timeout, ttl)
        self.table_prefix: str = check_prefix(table_prefix)
        self.owner: str = uuid.uuid4().hex
        self._channel = f"{table_prefix}runs"
        self._sql = {name: text.format(p=table_prefix) for name, text in SQL.items()}
        self._db = PostgresPool(
            dsn_or_pool,
            user="Postgres event log",
            error_type=RunError,
            min_size=min_size,
            max_size=max_size,
        )
        try:
            self._db.ensure_schema(
                table_prefix,
                "event_log",
                SCHEMA_VERSION,
                [s.format(p=table_prefix) for s in CREATE],
                {n: [s.format(p=table_prefix) for s in m] for n, m in MIGRATIONS.items()},
                TABLES,
            )
        except BaseException:
            self._db.close()
            raise
        self._keep_runs(
            PostgresWriteQueue(self._db, self._sql, self._channel, self.lost_after),
            max_runs,
            self.ttl,
            scheduler,
        )
        self._closed = False
        self._reader = PostgresReader(
            self._db,
            self._sql,
            channel=self._channel,
            listen_dsn=listen_dsn,
            poll=positive(poll, "poll"),
            beat=self.lost_after / 3,
            gone_after=self.lost_after + self.takeover_timeout,
            busy=lambda: bool(self._owned),
            on_cancel=self._cancel_requested,
            heartbeat=self._heartbeat,
            on_decision=self._appliers.decided,
        )

    def __repr__(self) -> str:
        return (
            f"PostgresEventLog(table_prefix={self.table_prefix!r}, lost_after={self.lost_after:g})"
        )

    # -- the owner's side -------------------------------------------------------------------

    def begin(
        self, run_id: str, conversation_id: str | None, cancel: Callable[[], None]
    ) -> RunWriter:
        """Register a run of this process: visible to :meth:`active_run` and followers at once.

        Raises:
            RunError: the database could not be written.
        """

        def insert() -> None:
            with self._db.transaction("begin a run") as cur:
                cur.execute(
                    self._sql["begin"], (run_id, conversation_id, self.owner, self.lost_after)
                )

        return self._begin(run_id, conversation_id, cancel, insert)

    # -- taking over lost runs (rxreact.runs.takeover) -----------------------------------------

    def claim_lost(self, limit: int = 100) -> list[LostRun]:
        """Claim up to ``limit`` runs whose owner stopped beating (or parked runs a decision
        or a deadline made due); of several processes claiming at once, each run goes to
        exactly one."""
        self._reader.ensure_started()  # the claimed runs' beats go on from here
        return claim_lost(self._db, self._sql, self.owner, self.lost_after, limit)

    def give_up(self, lost: LostRun, reason: str) -> None:
        """Mark a claimed run lost for good; its followers get ``RunLostError(reason)``."""
        give_up(self._db, self._sql, self._channel, lost, reason)

    def _heartbeat(self) -> None:
        """Renew this process's runs, and delete one batch of finished runs past ``ttl``
        (called by the reader thread every ``lost_after / 3`` seconds)."""
        run_ids, tokens = self._owned_tokens()
        sql = self._sql
        if run_ids:
            with self._db.transaction("renew runs") as cur:
                cur.execute(sql["lock_beats"], (run_ids,))  # in run_id order, as the writes
                cur.execute(sql["beat"], (self.lost_after, run_ids, tokens, self.owner))
        with self._db.transaction("delete expired runs") as cur:
            cur.execute(sql["expired"], (self.ttl, RETENTION_BATCH))
            expired = [row[0] for row in cur.fetchall()]
            if expired:
                for name in ("expire_entries", "expire_checkpoints", "expire_decisions"):
                    cur.execute(sql[name], (expired,))
            cur.execute(sql["expire_cancels"], (RETENTION_BATCH,))

    # -- anyone's side ----------------------------------------------------------------------

    def active_run(self, conversation_id: str) -> str | None:
        """The oldest running (or parked) run on ``conversation_id`` in any process, or
        ``None``."""
        with self._db.read("find the active run") as cur:
            cur.execute(self._sql["active"], (conversation_id,))
            row = cur.fetchone()
        return None if row is None else str(row[0])

    def request_cancel(self, run_id: str) -> None:
        """Cancel the run, here if this process owns it, else through its owner's reader."""
        if self._cancel_here(run_id):
            return
        with self._db.transaction("request a cancel") as cur:
            cur.execute(self._sql["cancel"], (run_id,))
            cur.execute(self._sql["notify_one"], (self._channel, NOTICES))

    # -- approvals from any process -------------------------------------------------------------

    def decide(self, run_id: str, call_id: str, approved: bool, reason: str | None = None) -> None:
        """Approve or deny a tool call of a run that waits for approval, from any process:
        the first decision is recorded and its owner applies it once.

        Raises:
            ApprovalDecisionError: no such call waits (unknown, decided already, run ended).
        """
        self._flush_if_owned(run_id)
        notice = (self._channel, NOTICES)
        record_decision(self._db, self._sql, notice, run_id, call_id, approved, reason)
        self._reader.wake()

    def close(self) -> None:
        """Commit what is queued (:meth:`flush`), stop the reader thread, close the pool if
        it is this log's.

        Parked runs of this process are let go: a decision on one is applied by whichever
        process resumes it next, without waiting ``lost_after``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.flush()
        self._reader.close()
        run_ids, tokens = self._owned_tokens()
        try:
            if run_ids:
                with self._db.transaction("let parked runs go") as cur:
                    cur.execute(self._sql["let_go"], (run_ids, tokens, self.owner))
        except RunError as error:  # they will count as gone after lost_after instead
            log.warning("Postgres event log: could not let parked runs go: %s", error)
        self._db.close()
