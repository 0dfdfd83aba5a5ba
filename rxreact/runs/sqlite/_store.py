"""The file of a :class:`~rxreact.runs.SQLiteEventLog`: its schema, and one connection.

Tables::

    runs         one row per run: its conversation, the process that owns it (owner, a
                 fencing token that grows with every new owner, and the owner's
                 ``lost_after``), state running / parked / ended / lost, beat (the owner's
                 last heartbeat, wall clock), when it ended, a parked run's deadline and
                 ``woken`` (decided since it parked), and ``due_at``: when a claim may take
                 it (generated from those; NULL for a parked run nothing wakes, and for
                 ended runs), indexed, so a claim reads only the runs that are due
    entries      the run's entries, keyed (run_id, seq): kind "e" holds the events up to seq
                 written since the previous entry (a JSON array, as in Redis), kind "end" the
                 end marker at last seq + 1
    checkpoints  the run's finished steps (never shown to subscribers), keyed (run_id, n)
    cancels      cancel requests, read by every owning process from the last id it saw
    decisions    approval decisions, one per (run, call): the first wins; read like cancels

Times are wall-clock (``time.time()``), the one clock every process of the host shares, as
the chat memory's leases. Each process opens the file with two connections: one for the
owner's writes and the calls of its users, one for the reader thread (so the reader sees the
other connection's commits through ``PRAGMA data_version`` like anyone else's).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rxreact.errors import RunError

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "Store"]

#: ``PRAGMA application_id`` of event log files ("rxRE"), told apart from chat memories.
APPLICATION_ID = 0x72785245
#: ``PRAGMA user_version`` of the schema below; bump it, with a migration, when it changes.
SCHEMA_VERSION = 2

# Version 1's tables. A new file is made as version 1 and migrated like an old one, so the
# migrations are the path every file takes.
_SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    conversation_id TEXT,
    owner TEXT,
    token INTEGER NOT NULL DEFAULT 1,
    state TEXT NOT NULL,
    started REAL NOT NULL,
    beat REAL NOT NULL,
    ended_at REAL,
    info TEXT
);
CREATE INDEX runs_by_conversation ON runs (conversation_id, started);
CREATE INDEX runs_by_state ON runs (state, ended_at);
CREATE TABLE entries (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE checkpoints (
    run_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, n)
) WITHOUT ROWID;
CREATE TABLE decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    call_id TEXT NOT NULL,
    approved INTEGER NOT NULL,
    reason TEXT,
    at REAL NOT NULL,
    UNIQUE (run_id, call_id)
);
CREATE TABLE cancels (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at REAL NOT NULL
);
"""

# When a claim may take a run (see rxreact.runs.takeover): a running run once its owner's
# beat is lost_after old; a parked one (its owner may be gone for days) only once there is
# something to do: a decision made since it parked (woken), or its deadline.
_DUE = """CASE
    WHEN state = 'running' OR (state = 'parked' AND woken) THEN beat + lost_after
    WHEN state = 'parked' AND deadline IS NOT NULL THEN max(beat + lost_after, deadline)
    END"""


def _migrations(lost_after: float) -> dict[int, tuple[str, ...]]:
    """The statements that take a file from ``user_version`` N to N + 1, by N.

    Version 2: the due index. The runs of version 1 files get the opener's ``lost_after``
    (their owners did not record theirs), and a parked run's deadline and whether it was
    decided since it parked move from its JSON ``info`` into columns.
    """
    return {
        1: (
            f"ALTER TABLE runs ADD COLUMN lost_after REAL NOT NULL DEFAULT {float(lost_after)!r}",
            "ALTER TABLE runs ADD COLUMN deadline REAL",
            "ALTER TABLE runs ADD COLUMN woken INTEGER NOT NULL DEFAULT 0",
            f"ALTER TABLE runs ADD COLUMN due_at REAL GENERATED ALWAYS AS ({_DUE}) VIRTUAL",
            "UPDATE runs SET deadline = json_extract(info, '$.deadline'), woken = EXISTS ("
            "SELECT 1 FROM decisions d WHERE d.run_id = runs.run_id "
            "AND d.at >= json_extract(runs.info, '$.since')), info = NULL "
            "WHERE state = 'parked' AND json_valid(info)",
            "CREATE INDEX runs_due ON runs (due_at) WHERE due_at IS NOT NULL",
        )
    }


def _connect(path: str, timeout: float) -> sqlite3.Connection:
    # isolation_level=None: no implicit transactions; write() opens its own.
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable at checkpoints, safe on a crash
    return db


class Store:
    """One connection to the file under a lock; every sqlite3 failure becomes a RunError."""

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._lock = threading.Lock()
        try:
            self._db = _connect(path, timeout)
        except sqlite3.Error as error:
            raise RunError(f"cannot open event log {path!r}: {error}") from error

    @classmethod
    def open(cls, path: str | os.PathLike[str], timeout: float, lost_after: float) -> Store:
        """Open (creating the schema in a new file, migrating an older one) and check the
        file is an event log; ``lost_after`` is the opener's (see :func:`_migrations`)."""
        path = os.path.expanduser(os.fspath(path))
        directory = os.path.dirname(path)
        if directory and not os.path.isdir(directory):
            raise RunError(f"cannot open event log {path!r}: {directory!r} does not exist")
        store = cls(path, timeout)
        try:
            store._prepare(lost_after)
        except BaseException:
            store.close()
            raise
        return store

    def _prepare(self, lost_after: float) -> None:
        with self.write("open") as db:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            empty = db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None
            if app_id == 0 and version == 0 and empty:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
                version = 1
            elif app_id != APPLICATION_ID:
                raise RunError(f"{self.path!r} is not an rxreact event log")
            elif version > SCHEMA_VERSION:
                raise RunError(
                    f"{self.path!r} has event log schema version {version}, newer than this "
                    f"rxreact's {SCHEMA_VERSION}: upgrade rxreact"
                )
            migrations = _migrations(lost_after)
            if version < SCHEMA_VERSION and version not in migrations:
                raise RunError(f"{self.path!r} has unknown event log schema version {version}")
            for step in range(version, SCHEMA_VERSION):
                for statement in migrations[step]:
                    db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        with self.read("open") as db:  # not inside a transaction: the mode cannot change there
            db.execute("PRAGMA journal_mode = WAL")

    def sibling(self) -> Store:
        """A second connection to the same file (the reader thread's)."""
        return Store(self.path, self.timeout)

    @contextmanager
    def read(self, action: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock, outside any transaction."""
        with self._lock:
            try:
                yield self._db
            except (sqlite3.Error, UnicodeEncodeError) as error:
                raise RunError(f"event log {self.path!r}: could not {action}: {error}") from error

    @contextmanager
    def write(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: writers queue up front on the timeout)."""
        with self.read(action) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()
