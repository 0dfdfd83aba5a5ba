"""The file of a :class:`~rxreact.runs.SQLiteEventLog`: its schema, and one connection.

Tables::

    runs         one row per run: its conversation, the process that owns it (owner, a
                 fencing token that grows with every new owner), state running / ended,
                 beat (the owner's last heartbeat, wall clock) and when it ended
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
#: ``PRAGMA user_version`` of the schema below.
SCHEMA_VERSION = 1

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
    def open(cls, path: str | os.PathLike[str], timeout: float) -> Store:
        """Open (creating the schema in a new file) and check the file is an event log."""
        path = os.path.expanduser(os.fspath(path))
        directory = os.path.dirname(path)
        if directory and not os.path.isdir(directory):
            raise RunError(f"cannot open event log {path!r}: {directory!r} does not exist")
        store = cls(path, timeout)
        try:
            store._prepare()
        except BaseException:
            store.close()
            raise
        return store

    def _prepare(self) -> None:
        with self.write("open") as db:
            app_id = db.execute("PRAGMA application_id").fetchone()[0]
            version = db.execute("PRAGMA user_version").fetchone()[0]
            empty = db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None
            if app_id == 0 and version == 0 and empty:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        db.execute(statement)
            elif app_id != APPLICATION_ID:
                raise RunError(f"{self.path!r} is not an rxreact event log")
            elif version != SCHEMA_VERSION:
                raise RunError(
                    f"{self.path!r} has event log schema version {version}; this rxreact "
                    f"reads {SCHEMA_VERSION}"
                )
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
