"""A chat memory in a SQLite file: the CLI's embedded default, survives restarts."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from rxreact._closeable import Closeable
from rxreact.errors import ChatMemoryError
from rxreact.memory._turns import decode_turns, encode_turn
from rxreact.memory.lease import Lease, lease_lost
from rxreact.messages import Message

__all__ = ["SQLiteChatMemory"]

#: ``PRAGMA application_id`` of our files ("rxRM"): tells our database from someone else's.
APPLICATION_ID = 0x7278524D
#: ``PRAGMA user_version`` of the schema below; bump it, with a migration, when the schema changes.
SCHEMA_VERSION = 3

# A conversation's lease row stays after release (owner NULL) to keep its last fencing token.
# expires_at is wall-clock time (time.time()): the one clock every process on the host shares.
_LEASES = """
CREATE TABLE leases (
    conversation_id TEXT PRIMARY KEY,
    owner TEXT,
    token INTEGER NOT NULL,
    expires_at REAL NOT NULL
);
"""

_SCHEMA = (
    """
CREATE TABLE turns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL,
    messages TEXT NOT NULL
);
CREATE INDEX turns_by_conversation ON turns (conversation_id, seq);
"""
    + _LEASES
)

#: The statements that take a file from ``user_version`` N to N + 1, by N. Version 3 changed
#: what a turn's JSON may hold, not the tables: messages made of parts (images and files,
#: their bytes inline as base64) and assistant messages' replay items. Every version 2 row
#: reads as it is; the new number makes an older rxreact refuse the file when it opens it,
#: instead of failing on the first turn it cannot read.
_MIGRATIONS = {1: _LEASES, 2: ""}

_LIVE = "conversation_id = ? AND owner = ? AND token = ? AND expires_at > ?"

# A conversation's spend (a per-conversation Budget), made when first needed and outside the
# schema version: an older rxreact opens the file as before and leaves the table alone.
_SPEND = "CREATE TABLE IF NOT EXISTS spend (conversation_id TEXT PRIMARY KEY, usd REAL NOT NULL)"


class SQLiteChatMemory(Closeable):
    """Histories in a SQLite file, one row per turn; optionally trimmed to the last ``max_turns``.

    A row holds one whole turn (the messages of one :meth:`append`, as JSON), so trimming drops
    whole rows and an assistant tool-call message can never be separated from its tool results.
    Images and files in a turn are stored inline, their bytes as base64 in the row (at most
    :data:`~rxreact.messages.MAX_PART_BYTES` each), and so are assistant replay items.
    One connection is shared by all threads under a lock (the agent calls from pool threads,
    and a connection per thread would leak one for every pool thread that ever touched it);
    WAL mode lets other processes on the same file read while this one writes, and
    ``timeout`` is how long a write waits for another process's write to finish.

    A conversation's lease is a row of the ``leases`` table, granted, renewed, checked and
    released in write transactions, so processes sharing the file see one lease; a fenced
    ``append`` checks the row and inserts the turn in the same transaction. Expiry uses the
    wall clock, shared by the processes of one host (a file on a network share is not a
    supported way to share a memory between hosts: use Redis).

    The file is marked with an application id and a schema version (``PRAGMA user_version``),
    so a file that is not ours, or one written by a newer rxreact, is refused with a
    :class:`~rxreact.ChatMemoryError` instead of being written into.

    Args:
        path: the database file (created with its schema when missing or empty); ``~`` is
            expanded. Its directory must exist: a missing one is a :class:`ChatMemoryError`.
        max_turns: keep only the last this many turns of each conversation.
        timeout: seconds to wait for another connection's write lock.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, max_turns: int | None = None, timeout: float = 5.0
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.path: str = os.path.expanduser(os.fspath(path))
        directory = os.path.dirname(self.path)
        if self.path != ":memory:" and directory and not os.path.isdir(directory):
            raise ChatMemoryError(
                f"cannot open chat memory {self.path!r}: the directory {directory!r} does not exist"
            )
        self._max_turns = max_turns
        self._lock = threading.Lock()
        try:
            # isolation_level=None: no implicit transactions; append() opens its own.
            self._db = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as error:
            raise ChatMemoryError(f"cannot open chat memory {self.path!r}: {error}") from error
        try:
            self._prepare()
        except BaseException:
            self._db.close()
            raise

    def _prepare(self) -> None:
        """Create the schema in a new file, or check that an existing one is ours."""
        with self._transaction("open"):
            app_id, version = self._pragma("application_id"), self._pragma("user_version")
            if app_id == 0 and version == 0 and not self._has_tables():
                self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                self._script(_SCHEMA)
            elif app_id != APPLICATION_ID:
                raise ChatMemoryError(f"{self.path!r} is not an rxreact chat memory")
            elif version > SCHEMA_VERSION:
                raise ChatMemoryError(
                    f"{self.path!r} has schema version {version}, newer than this rxreact's "
                    f"{SCHEMA_VERSION}: upgrade rxreact"
                )
            elif version < SCHEMA_VERSION:
                if version not in _MIGRATIONS:
                    raise ChatMemoryError(f"{self.path!r} has unknown schema version {version}")
                for step in range(version, SCHEMA_VERSION):
                    self._script(_MIGRATIONS[step])
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        # Outside the transaction: the journal mode cannot change inside one. An in-memory
        # database answers "memory" and stays so, which is fine.
        with self._guard("open"):
            self._db.execute("PRAGMA journal_mode = WAL")

    def _script(self, statements: str) -> None:
        """Run ``;``-separated statements inside the current transaction (``executescript``
        would commit it first)."""
        for statement in statements.split(";"):
            if statement.strip():
                self._db.execute(statement)

    def _pragma(self, name: str) -> int:
        value: int = self._db.execute(f"PRAGMA {name}").fetchone()[0]
        return value

    def _has_tables(self) -> bool:
        return self._db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None

    @contextmanager
    def _guard(self, action: str) -> Iterator[sqlite3.Connection]:
        """The connection under the lock; every sqlite3 failure becomes a ChatMemoryError."""
        with self._lock:
            try:
                yield self._db
            # A str sqlite3 cannot encode (a lone surrogate in a conversation id) is ours too.
            except (sqlite3.Error, UnicodeEncodeError) as error:
                raise ChatMemoryError(
                    f"chat memory {self.path!r}: could not {action}: {error}"
                ) from error

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it or none of it.

        ``BEGIN IMMEDIATE`` takes the write lock up front, so two processes appending at once
        queue on ``timeout`` instead of failing when a read lock cannot be upgraded.
        """
        with self._guard(action) as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        with self._guard("load the conversation") as db:
            rows = db.execute(
                "SELECT seq, messages FROM turns WHERE conversation_id = ? ORDER BY seq",
                (conversation_id,),
            ).fetchall()
        return decode_turns(rows, f"chat memory {self.path!r}", conversation_id)

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        """Add a turn (one row) and trim, in one transaction; an empty turn adds nothing.

        With ``lease`` the same transaction first checks that the lease is live.
        """
        if not messages and lease is None:
            return
        data = encode_turn(messages).decode()
        with self._transaction("store the turn") as db:
            if lease is not None and not self._holds(db, lease):
                raise lease_lost(lease)
            if not messages:
                return
            db.execute(
                "INSERT INTO turns (conversation_id, messages) VALUES (?, ?)",
                (conversation_id, data),
            )
            if self._max_turns is not None:
                db.execute(
                    "DELETE FROM turns WHERE conversation_id = ? AND seq <= ("
                    "SELECT seq FROM turns WHERE conversation_id = ? "
                    "ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                    (conversation_id, conversation_id, self._max_turns),
                )

    @staticmethod
    def _holds(db: sqlite3.Connection, lease: Lease) -> bool:
        row = db.execute(
            f"SELECT 1 FROM leases WHERE {_LIVE}",
            (lease.conversation_id, lease.owner, lease.token, time.time()),
        ).fetchone()
        return row is not None

    def _held(self, conversation_id: str) -> bool:
        """A read without the write lock: pollers of a busy conversation never queue for it."""
        with self._guard("read the lease") as db:
            row = db.execute(
                "SELECT 1 FROM leases WHERE conversation_id = ? AND owner IS NOT NULL "
                "AND expires_at > ?",
                (conversation_id, time.time()),
            ).fetchone()
        return row is not None

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """The conversation's lease for ``ttl`` seconds, or ``None`` while another is live."""
        # Checked before anything is written: arguments a Lease refuses take nothing.
        lease = Lease(conversation_id=conversation_id, owner=owner, token=1, ttl=ttl)
        if self._held(conversation_id):
            return None
        with self._transaction("take the lease") as db:
            now = time.time()
            row = db.execute(
                "SELECT owner, token, expires_at FROM leases WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()
            if row is not None and row[0] is not None and row[2] > now:
                return None
            token = 1 if row is None else row[1] + 1
            db.execute(
                "INSERT INTO leases (conversation_id, owner, token, expires_at) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (conversation_id) DO UPDATE SET "
                "owner = excluded.owner, token = excluded.token, expires_at = excluded.expires_at",
                (conversation_id, owner, token, now + ttl),
            )
        return lease.model_copy(update={"token": token})

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl from now; False if it was lost."""
        with self._transaction("renew the lease") as db:
            now = time.time()
            cursor = db.execute(
                f"UPDATE leases SET expires_at = ? WHERE {_LIVE}",
                (now + lease.ttl, lease.conversation_id, lease.owner, lease.token, now),
            )
            return cursor.rowcount == 1

    def hand_over(self, lease: Lease, owner: str, ttl: float) -> Lease | None:
        """Pass ``lease`` to ``owner`` with the next token, if no grant was made after it.

        Live, expired or released, ``lease`` passes as long as the row still holds its token
        (a released row keeps the token with no owner); checked and written in one transaction.
        """
        successor = Lease(
            conversation_id=lease.conversation_id, owner=owner, token=lease.token + 1, ttl=ttl
        )
        with self._transaction("hand the lease over") as db:
            cursor = db.execute(
                "UPDATE leases SET owner = ?, token = ?, expires_at = ? WHERE conversation_id = ? "
                "AND token = ? AND (owner IS NULL OR owner = ?)",
                (
                    owner,
                    successor.token,
                    time.time() + ttl,
                    lease.conversation_id,
                    lease.token,
                    lease.owner,
                ),
            )
            handed = cursor.rowcount == 1
        return successor if handed else None

    def release(self, lease: Lease) -> None:
        """End a live lease now (the row stays, keeping the conversation's last token)."""
        with self._transaction("release the lease") as db:
            db.execute(
                "UPDATE leases SET owner = NULL, expires_at = 0 "
                "WHERE conversation_id = ? AND owner = ? AND token = ?",
                (lease.conversation_id, lease.owner, lease.token),
            )

    def spend(self, conversation_id: str) -> float:
        """USD the conversation's runs spent so far (a per-conversation ``Budget``)."""
        with self._transaction("read the spend") as db:
            db.execute(_SPEND)
            row = db.execute(
                "SELECT usd FROM spend WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
        return float(row[0]) if row else 0.0

    def add_spend(self, conversation_id: str, usd: float) -> float:
        """Add ``usd`` to the conversation's spend, atomically; returns the new total."""
        with self._transaction("add to the spend") as db:
            db.execute(_SPEND)
            db.execute(
                "INSERT INTO spend (conversation_id, usd) VALUES (?, ?) "
                "ON CONFLICT (conversation_id) DO UPDATE SET usd = usd + excluded.usd",
                (conversation_id, usd),
            )
            row = db.execute(
                "SELECT usd FROM spend WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
        return float(row[0])

    def conversation_ids(self) -> list[str]:
        """The ids with a stored history, by their oldest kept turn."""
        with self._guard("list conversations") as db:
            rows = db.execute(
                "SELECT conversation_id FROM turns GROUP BY conversation_id ORDER BY MIN(seq)"
            ).fetchall()
        return [row[0] for row in rows]

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or all."""
        with self._transaction("clear") as db:
            # Lease rows stay: clearing a history must not reset tokens or free a held lease.
            if conversation_id is None:
                db.execute("DELETE FROM turns")
            else:
                db.execute("DELETE FROM turns WHERE conversation_id = ?", (conversation_id,))

    def close(self) -> None:
        """Close the connection (idempotent); later calls raise ChatMemoryError."""
        with self._lock:
            self._db.close()
