"""Where a durable event log lives, as one string a test hands its child processes: a SQLite
file's path, a Redis URL, or a Postgres DSN with the tables' prefix after ``#``
(``postgresql://rxreact@127.0.0.1:5432/rxreact_test#t7_``), and the log opened on it."""

from __future__ import annotations

from typing import Any

from rxreact import (
    PostgresChatMemory,
    PostgresEventLog,
    RedisEventLog,
    SQLiteChatMemory,
    SQLiteEventLog,
)

__all__ = [
    "is_postgres",
    "open_cluster_log",
    "open_log",
    "open_memory",
    "postgres_place",
    "split_place",
]


def is_postgres(where: str) -> bool:
    return where.startswith("postgresql://")


def postgres_place(server: Any, *, bouncer: bool = False) -> str:
    """A place on the test session's Postgres server with tables no other test uses."""
    return f"{server.dsn(bouncer=bouncer)}#{server.new_prefix()}"


def split_place(where: str) -> tuple[str, str]:
    """A Postgres place's DSN and table prefix."""
    dsn, _, prefix = where.partition("#")
    return dsn, prefix or "rxreact_"


def open_log(where: str, **options: Any) -> Any:
    """The event log at ``where``; a Postgres one listens on its (direct) DSN."""
    if where.startswith("redis://"):
        return RedisEventLog(where, **options)
    if is_postgres(where):
        dsn, prefix = split_place(where)
        options.setdefault("listen_dsn", dsn)
        return PostgresEventLog(dsn, table_prefix=prefix, min_size=1, max_size=4, **options)
    return SQLiteEventLog(where, **options)


def open_cluster_log(url: str, **options: Any) -> Any:
    """The event log on the Redis Cluster one of whose nodes ``url`` names."""
    return RedisEventLog(url, cluster=True, **options)


def open_memory(where: str) -> Any:
    """The chat memory at ``where``: a SQLite file, or a Postgres place."""
    if is_postgres(where):
        dsn, prefix = split_place(where)
        return PostgresChatMemory(dsn, table_prefix=prefix, min_size=1, max_size=4)
    return SQLiteChatMemory(where)
