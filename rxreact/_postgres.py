"""psycopg 3 for the Postgres backends (chat memory, event log): imported on first use, so
``rxreact`` works without the ``postgres`` extra; one pool from a DSN or the caller's; short
transactions that work behind PgBouncer; the schema made and migrated by version.

**Behind a transaction pooler.** Nothing here relies on session state: statements are never
prepared (``prepare_threshold = None``, set on each connection as it is taken from the pool,
so a caller's pool works as it is), timeouts are ``SET LOCAL`` (``set_config(..., true)``)
inside each transaction, and every write is one transaction opened and committed in the same
block, never left open between statements of the caller. Locks are transaction-scoped
(``pg_advisory_xact_lock``), never session advisory locks.

**Short transactions.** Each transaction sets ``lock_timeout`` (a statement waits at most that
long for a row another transaction holds), ``idle_in_transaction_session_timeout`` (a process
paused inside a transaction, by a GC pause or ``SIGSTOP``, is cut off by the server, its locks
released) and ``statement_timeout``, so no owner, however stuck, blocks a takeover for more
than a few seconds.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rxreact.errors import ConfigurationError, RxReactError

__all__ = [
    "TIMEOUTS",
    "PostgresPool",
    "check_prefix",
]

TIMEOUTS: Mapping[str, str] = {
    "lock_timeout": "5s",
    "idle_in_transaction_session_timeout": "5s",
    "statement_timeout": "30s",
}
"""What every transaction of rxreact's sets for itself (``SET LOCAL``)."""

_PREFIX = re.compile(r"[a-z_][a-z0-9_]{0,39}")
_SETTINGS = "SELECT " + ", ".join(f"set_config('{k}', '{v}', true)" for k, v in TIMEOUTS.items())


def check_prefix(prefix: str) -> str:
    """A table prefix that is safe to put in SQL as it is (lower case letters, digits, ``_``)."""
    if not _PREFIX.fullmatch(prefix):
        raise ValueError(
            f"table_prefix {prefix!r}: use at most 40 lower-case letters, digits and '_', "
            "not starting with a digit"
        )
    return prefix


def _psycopg(user: str) -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as error:
        raise ConfigurationError(
            f"{user} needs psycopg 3 and psycopg-pool: pip install 'rxreact[postgres]' ({error})"
        ) from None
    return psycopg, psycopg_pool


class PostgresPool:
    """The connections of one backend object: a pool made from a DSN (this object's: closed
    by :meth:`close`; ``min_size`` connections, and no more unless ``max_size`` says so) or
    the caller's ``psycopg_pool.ConnectionPool`` (left open, sized as its owner chose).

    Every psycopg failure, and a text psycopg cannot encode, becomes ``error_type(action)``.
    """

    def __init__(
        self,
        dsn_or_pool: Any,
        *,
        user: str,
        error_type: type[RxReactError],
        min_size: int = 4,
        max_size: int | None = None,
    ) -> None:
        psycopg, psycopg_pool = _psycopg(user)
        self.psycopg: Any = psycopg
        self._error_type = error_type
        self._user = user
        self.owned: bool = isinstance(dsn_or_pool, str)
        if self.owned:
            self.dsn: str = dsn_or_pool
            try:
                self.pool: Any = psycopg_pool.ConnectionPool(
                    dsn_or_pool,
                    min_size=min_size,
                    max_size=min_size if max_size is None else max(min_size, max_size),
                    kwargs={"autocommit": True, "prepare_threshold": None},
                    name=f"rxreact {user}",
                    open=False,
                )
                self.pool.open(wait=False)
            except psycopg.Error as error:
                raise error_type(f"{user}: cannot connect: {error}") from error
        elif isinstance(dsn_or_pool, psycopg_pool.ConnectionPool):
            self.pool = dsn_or_pool
            self.dsn = str(dsn_or_pool.conninfo)
        else:
            raise TypeError(
                f"{user} takes a DSN string or a psycopg_pool.ConnectionPool, "
                f"not {type(dsn_or_pool).__name__}"
            )
        self._closed = threading.Event()

    def _fail(self, action: str, error: BaseException) -> RxReactError:
        return self._error_type(f"{self._user}: could not {action}: {error}")

    @contextmanager
    def connection(self, action: str) -> Iterator[Any]:
        """A pooled connection ready for rxreact's statements (no prepared statements)."""
        if self._closed.is_set():
            raise self._error_type(f"{self._user}: could not {action}: it is closed")
        psycopg = self.psycopg
        try:
            with self.pool.connection(timeout=10.0) as conn:
                # A caller's pool gets its connection back as it lent it.
                threshold, conn.prepare_threshold = conn.prepare_threshold, None
                try:
                    yield conn
                finally:
                    conn.prepare_threshold = threshold
        except (psycopg.Error, UnicodeEncodeError) as error:
            raise self._fail(action, error) from error
        except Exception as error:  # the pool's own PoolTimeout, a closed pool
            if type(error).__module__.startswith("psycopg_pool"):
                raise self._fail(action, error) from error
            raise

    @contextmanager
    def transaction(self, action: str) -> Iterator[Any]:
        """One short transaction (timeouts set for it alone); yields a cursor."""
        with self.connection(action) as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.execute(_SETTINGS)
            yield cursor

    @contextmanager
    def read(self, action: str) -> Iterator[Any]:
        """A cursor for reads: one statement each, outside an explicit transaction."""
        with self.connection(action) as conn, conn.cursor() as cursor:
            yield cursor

    def ensure_schema(
        self,
        prefix: str,
        component: str,
        version: int,
        create: Sequence[str],
        migrations: Mapping[int, Sequence[str]],
        tables: Sequence[str],
    ) -> None:
        """Create ``component``'s tables, or migrate them to ``version``, once: under an
        advisory lock, so two workers starting at once on an empty database both work.

        The versions live in ``{prefix}schema`` (one row per component). Tables by our names
        without that row are someone else's, and a newer version is a newer rxreact's: both
        are refused.
        """
        with self.transaction(f"prepare the {component} tables") as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"rxreact:{prefix}",))
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {prefix}schema "
                "(component text PRIMARY KEY, version integer NOT NULL)"
            )
            cur.execute(f"SELECT version FROM {prefix}schema WHERE component = %s", (component,))
            row = cur.fetchone()
            if row is None:
                for table in tables:
                    cur.execute("SELECT to_regclass(%s)", (f"{prefix}{table}",))
                    if cur.fetchone()[0] is not None:
                        raise self._error_type(
                            f"{self._user}: table {prefix}{table} exists but is not an rxreact "
                            f"{component} table (choose another table_prefix)"
                        )
                for statement in create:
                    cur.execute(statement)
                cur.execute(
                    f"INSERT INTO {prefix}schema (component, version) VALUES (%s, %s)",
                    (component, version),
                )
                return
            found = int(row[0])
            if found > version:
                raise self._error_type(
                    f"{self._user}: the {component} tables have schema version {found}, newer "
                    f"than this rxreact's {version}: upgrade rxreact"
                )
            if found < version and found not in migrations:
                raise self._error_type(f"{self._user}: unknown {component} schema version {found}")
            for step in range(found, version):
                for statement in migrations[step]:
                    cur.execute(statement)
            cur.execute(
                f"UPDATE {prefix}schema SET version = %s WHERE component = %s",
                (version, component),
            )

    def close(self) -> None:
        """Close the pool if it is this object's (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self.owned:
            self.pool.close()
