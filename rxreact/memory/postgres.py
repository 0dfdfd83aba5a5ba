"""A chat memory in PostgreSQL: one history shared by many processes and hosts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rxreact._closeable import Closeable
from rxreact._postgres import PostgresPool, check_prefix
from rxreact.errors import ChatMemoryError
from rxreact.memory._turns import decode_turns, encode_turn
from rxreact.memory.lease import Lease, lease_lost
from rxreact.messages import Message

__all__ = ["PostgresChatMemory"]

#: The version of the tables below, in ``{prefix}schema`` (component ``chat_memory``).
SCHEMA_VERSION = 1

_TABLES = ("turns", "leases")

# A conversation's lease row stays after release (owner NULL) to keep its last fencing token.
# Times are the database's clock (clock_timestamp()), the one clock every host shares.
_CREATE = (
    "CREATE TABLE {p}turns (seq bigserial PRIMARY KEY, conversation_id text NOT NULL, "
    "messages text NOT NULL)",
    "CREATE INDEX {p}turns_by_conversation ON {p}turns (conversation_id, seq)",
    "CREATE TABLE {p}leases (conversation_id text PRIMARY KEY, owner text, "
    "token bigint NOT NULL, expires_at timestamptz NOT NULL)",
)
#: Statements that take the tables from version N to N + 1, by N.
_MIGRATIONS: dict[int, tuple[str, ...]] = {}

_LIVE = "conversation_id = %s AND owner = %s AND token = %s AND expires_at > clock_timestamp()"


class PostgresChatMemory(Closeable):
    """Histories in a PostgreSQL table, one row per turn; optionally trimmed to ``max_turns``.

    A row holds one whole turn (the messages of one :meth:`append`, as JSON text: parts'
    bytes inline as base64, replay items as they came), so trimming drops whole rows and a
    tool-call message is never separated from its results. An ``append`` is one transaction
    that first takes the conversation's transaction-scoped advisory lock, so turns appended at
    once from anywhere are committed one after the other, in ``seq`` order, each with its
    trimming.

    A conversation's lease is a row of ``{prefix}leases`` with a fencing token and an expiry
    on the database's clock (hosts need not agree on time). Granting is one ``INSERT ... ON
    CONFLICT DO UPDATE ... WHERE`` (atomic on the row); a fenced ``append`` locks the lease
    row and checks it in the same transaction that inserts the turn, so a paused old owner's
    write is refused at once and a takeover waits for no one.

    Works behind PgBouncer in transaction mode as it is (see :mod:`rxreact._postgres`). The
    tables are made on first use, under an advisory lock, and their version is kept in
    ``{prefix}schema``.

    Args:
        dsn_or_pool: a DSN (``postgresql://user@host/db``: the pool made from it is this
            memory's, closed by :meth:`close`) or a ``psycopg_pool.ConnectionPool`` (the
            caller's: left open).
        table_prefix: the start of every table name, to share a database with others.
        max_turns: keep only the last this many turns of each conversation.
        min_size: connections an owned pool keeps open.
        max_size: connections an owned pool may grow to under load (default ``min_size``).

    Raises:
        ConfigurationError: psycopg is not installed (``pip install 'rxreact[postgres]'``).
        ChatMemoryError: the database cannot be reached, or its tables are not ours.
    """

    def __init__(
        self,
        dsn_or_pool: Any,
        *,
        table_prefix: str = "rxreact_",
        max_turns: int | None = None,
        min_size: int = 4,
        max_size: int | None = None,
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.table_prefix: str = check_prefix(table_prefix)
        self._max_turns = max_turns
        self._db = PostgresPool(
            dsn_or_pool,
            user="Postgres chat memory",
            error_type=ChatMemoryError,
            min_size=min_size,
            max_size=max_size,
        )
        self._sql = {name: text.format(p=table_prefix) for name, text in _SQL.items()}
        try:
            self._db.ensure_schema(
                table_prefix,
                "chat_memory",
                SCHEMA_VERSION,
                [s.format(p=table_prefix) for s in _CREATE],
                {n: [s.format(p=table_prefix) for s in m] for n, m in _MIGRATIONS.items()},
                _TABLES,
            )
        except BaseException:
            self._db.close()
            raise

    def __repr__(self) -> str:
        return f"PostgresChatMemory(table_prefix={self.table_prefix!r})"

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        with self._db.read("load the conversation") as cur:
            cur.execute(self._sql["load"], (conversation_id,))
            rows = cur.fetchall()
        return decode_turns(rows, "Postgres chat memory", conversation_id)

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        """Add a turn (one row) and trim, in one transaction; an empty turn adds nothing.

        With ``lease`` the same transaction first locks and checks the lease row.
        """
        if not messages and lease is None:
            return
        data = encode_turn(messages).decode()
        with self._db.transaction("store the turn") as cur:
            if lease is not None:
                cur.execute(
                    self._sql["holds"],
                    (lease.conversation_id, lease.owner, lease.token),
                )
                if cur.fetchone() is None:
                    raise lease_lost(lease)
            if not messages:
                return
            cur.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (self._lock(conversation_id),)
            )
            cur.execute(self._sql["insert"], (conversation_id, data))
            if self._max_turns is not None:
                cur.execute(self._sql["trim"], (conversation_id, conversation_id, self._max_turns))

    def _lock(self, conversation_id: str) -> str:
        return f"{self.table_prefix}turns:{conversation_id}"

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """The conversation's lease for ``ttl`` seconds, or ``None`` while another is live."""
        # Checked before anything is written: arguments a Lease refuses take nothing.
        lease = Lease(conversation_id=conversation_id, owner=owner, token=1, ttl=ttl)
        with self._db.read("read the lease") as cur:  # pollers of a busy conversation: no write
            cur.execute(self._sql["held"], (conversation_id,))
            if cur.fetchone() is not None:
                return None
        with self._db.transaction("take the lease") as cur:
            cur.execute(self._sql["acquire"], (conversation_id, owner, ttl))
            row = cur.fetchone()
        return None if row is None else lease.model_copy(update={"token": int(row[0])})

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl from now; False if it was lost."""
        with self._db.transaction("renew the lease") as cur:
            cur.execute(
                self._sql["renew"],
                (lease.ttl, lease.conversation_id, lease.owner, lease.token),
            )
            renewed: bool = cur.rowcount == 1
        return renewed

    def hand_over(self, lease: Lease, owner: str, ttl: float) -> Lease | None:
        """Pass ``lease`` to ``owner`` with the next token, if no grant was made after it
        (live, expired or released: the row still holds its token); one statement."""
        successor = Lease(
            conversation_id=lease.conversation_id, owner=owner, token=lease.token + 1, ttl=ttl
        )
        with self._db.transaction("hand the lease over") as cur:
            cur.execute(
                self._sql["hand_over"],
                (owner, successor.token, ttl, lease.conversation_id, lease.token, lease.owner),
            )
            handed = cur.rowcount == 1
        return successor if handed else None

    def release(self, lease: Lease) -> None:
        """End a live lease now (the row stays, keeping the conversation's last token)."""
        with self._db.transaction("release the lease") as cur:
            cur.execute(self._sql["release"], (lease.conversation_id, lease.owner, lease.token))

    def conversation_ids(self) -> list[str]:
        """The ids with a stored history, by their oldest kept turn."""
        with self._db.read("list conversations") as cur:
            cur.execute(self._sql["ids"])
            return [str(row[0]) for row in cur.fetchall()]

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or all (lease rows stay: tokens never go back)."""
        with self._db.transaction("clear") as cur:
            if conversation_id is None:
                cur.execute(self._sql["clear_all"])
            else:
                cur.execute(self._sql["clear"], (conversation_id,))

    def close(self) -> None:
        """Close the pool if this memory made it from a DSN (idempotent); a caller's pool
        stays open. Later calls raise :class:`~rxreact.ChatMemoryError`."""
        self._db.close()


_SQL = {
    "load": "SELECT seq, messages FROM {p}turns WHERE conversation_id = %s ORDER BY seq",
    "holds": f"SELECT 1 FROM {{p}}leases WHERE {_LIVE} FOR UPDATE",
    "insert": "INSERT INTO {p}turns (conversation_id, messages) VALUES (%s, %s)",
    "trim": "DELETE FROM {p}turns WHERE conversation_id = %s AND seq <= (SELECT seq FROM "
    "{p}turns WHERE conversation_id = %s ORDER BY seq DESC LIMIT 1 OFFSET %s)",
    "held": "SELECT 1 FROM {p}leases WHERE conversation_id = %s AND owner IS NOT NULL "
    "AND expires_at > clock_timestamp()",
    "acquire": "INSERT INTO {p}leases AS l (conversation_id, owner, token, expires_at) "
    "VALUES (%s, %s, 1, clock_timestamp() + make_interval(secs => %s)) "
    "ON CONFLICT (conversation_id) DO UPDATE SET owner = excluded.owner, "
    "token = l.token + 1, expires_at = excluded.expires_at "
    "WHERE l.owner IS NULL OR l.expires_at <= clock_timestamp() RETURNING l.token",
    "renew": "UPDATE {p}leases SET expires_at = clock_timestamp() + make_interval(secs => %s) "
    f"WHERE {_LIVE}",
    "hand_over": "UPDATE {p}leases SET owner = %s, token = %s, "
    "expires_at = clock_timestamp() + make_interval(secs => %s) WHERE conversation_id = %s "
    "AND token = %s AND (owner IS NULL OR owner = %s)",
    "release": "UPDATE {p}leases SET owner = NULL, expires_at = '-infinity' "
    "WHERE conversation_id = %s AND owner = %s AND token = %s",
    "ids": "SELECT conversation_id FROM {p}turns GROUP BY conversation_id ORDER BY MIN(seq)",
    "clear_all": "DELETE FROM {p}turns",
    "clear": "DELETE FROM {p}turns WHERE conversation_id = %s",
}
