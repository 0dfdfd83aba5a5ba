"""The durable event log contract (:mod:`rxreact.testing.conformance`) on every durable
backend: a SQLite file, a real redis-server, a real postgres (direct, and through PgBouncer
in transaction mode, where followers poll). One class per backend, each giving the suite its
``make_log`` and, where the backend can, ``corrupt_entry`` and ``outage``.

A real three-master Redis Cluster (the session's) runs it too: ``TestRedisClusterEventLog``
(one ``RedisCluster`` client shared by the logs of a test; its outage is every master stopped
with SIGSTOP and continued) and ``TestRedisClusterEventLogAcrossProcesses`` (each process its
own client, from the URL with ``cluster=True``).
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from durable_logs import postgres_place
from postgres_server import PostgresServer
from redis_cluster import LocalCluster
from redis_server import RedisServer, running_redis_server

from rxreact import PostgresEventLog, RedisEventLog, SQLiteEventLog
from rxreact.runs.redis._keys import Keys
from rxreact.testing.conformance import (
    EventLogConformance,
    EventLogProcessConformance,
    MakeLog,
)

_GARBAGE = b"\x00\xffnot events"


@contextmanager
def logs(make: Callable[..., Any]) -> Iterator[MakeLog]:
    """A ``make_log`` from a constructor; every log made is closed at the end."""
    made: list[Any] = []

    def make_log(**options: Any) -> Any:
        made.append(make(**options))
        return made[-1]

    yield make_log
    for log in made:
        log.close()


def stopped_between(
    stop: Callable[[], object], start: Callable[[], object]
) -> Callable[[], AbstractContextManager[None]]:
    """An ``outage``: the server stopped on entry and started again on exit."""

    @contextmanager
    def stopped() -> Iterator[None]:
        stop()
        try:
            yield
        finally:
            assert start() is not False, "the server did not start again"

    return stopped


class TestSQLiteEventLog(EventLogConformance):
    @pytest.fixture
    def make_log(self, tmp_path: Path) -> Iterator[MakeLog]:
        with logs(lambda **options: SQLiteEventLog(tmp_path / "runs.db", **options)) as make:
            yield make

    @pytest.fixture
    def corrupt_entry(self, tmp_path: Path) -> Callable[[str], None]:
        def corrupt(run_id: str) -> None:
            with sqlite3.connect(tmp_path / "runs.db") as db:
                db.execute("UPDATE entries SET body = ? WHERE run_id = ?", (_GARBAGE, run_id))

        return corrupt

    @pytest.fixture
    def outage(self, tmp_path: Path) -> Callable[[], AbstractContextManager[None]]:
        """A file has no server to lose: its outage is another process holding it locked
        (a backup, a migration) for a while."""

        @contextmanager
        def locked() -> Iterator[None]:
            db = sqlite3.connect(tmp_path / "runs.db", isolation_level=None)
            try:
                db.execute("BEGIN EXCLUSIVE")
                yield
            finally:
                db.close()

        return locked


class TestRedisEventLog(EventLogConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def persistent_redis(cls) -> Iterator[RedisServer]:
        """This class's own server, with an append-only file: the outage test stops it and
        starts it again, and a production Redis keeps its data over a restart."""
        with running_redis_server(persistent=True) as server:
            yield server

    @pytest.fixture
    def outage(self, persistent_redis: RedisServer) -> Callable[[], AbstractContextManager[None]]:
        return stopped_between(persistent_redis.stop, persistent_redis.restart)

    @pytest.fixture
    def make_log(self, persistent_redis: RedisServer) -> Iterator[MakeLog]:
        import redis

        with redis.Redis.from_url(persistent_redis.url) as client:
            client.flushdb()
        with logs(lambda **options: RedisEventLog(persistent_redis.url, **options)) as make:
            yield make

    @pytest.fixture
    def corrupt_entry(self, persistent_redis: RedisServer) -> Callable[[str], None]:
        import redis

        def corrupt(run_id: str) -> None:
            with redis.Redis.from_url(persistent_redis.url) as client:
                key = f"rxreact:run:{run_id}"
                client.delete(key)
                client.xadd(key, {"e": _GARBAGE}, id="0-1")

        return corrupt


class TestRedisClusterEventLog(EventLogConformance):
    @pytest.fixture
    def make_log(self, redis_cluster: LocalCluster, redis_cluster_client: Any) -> Iterator[MakeLog]:
        redis_cluster.flush()
        with logs(lambda **options: RedisEventLog(redis_cluster_client, **options)) as make:
            yield make

    @pytest.fixture
    def corrupt_entry(self, redis_cluster_client: Any) -> Callable[[str], None]:
        def corrupt(run_id: str) -> None:
            key = Keys("rxreact:", cluster=True).run(run_id)
            redis_cluster_client.delete(key)
            redis_cluster_client.xadd(key, {"e": _GARBAGE}, id="0-1")

        return corrupt

    @pytest.fixture
    def outage(self, redis_cluster: LocalCluster) -> Callable[[], AbstractContextManager[None]]:
        # Every master stopped (SIGSTOP: unreachable, its data kept), then continued.
        def signal_all(sent: signal.Signals) -> None:
            for node in redis_cluster.nodes:
                node.process.send_signal(sent)

        def go_on() -> bool:
            signal_all(signal.SIGCONT)
            return redis_cluster.wait_ok(time.monotonic() + 30)

        return stopped_between(lambda: signal_all(signal.SIGSTOP), go_on)


class TestPostgresEventLog(EventLogConformance):
    bouncer = False

    @pytest.fixture
    def prefix(self, postgres_server: PostgresServer) -> str:
        return postgres_server.new_prefix()

    @pytest.fixture
    def make_log(self, postgres_server: PostgresServer, prefix: str) -> Iterator[MakeLog]:
        dsn = postgres_server.dsn(bouncer=self.bouncer)
        # Direct: listening on the same DSN. Through PgBouncer: no listen_dsn, so it polls.
        listen = None if self.bouncer else dsn

        def make(**options: Any) -> PostgresEventLog:
            return PostgresEventLog(
                dsn, table_prefix=prefix, listen_dsn=listen, min_size=1, max_size=4, **options
            )

        with logs(make) as make_log:
            yield make_log

    @pytest.fixture
    def corrupt_entry(self, postgres_server: PostgresServer, prefix: str) -> Callable[[str], None]:
        import psycopg

        def corrupt(run_id: str) -> None:
            with psycopg.connect(postgres_server.dsn(), autocommit=True) as conn:
                conn.execute(
                    f"UPDATE {prefix}entries SET body = %s WHERE run_id = %s", (_GARBAGE, run_id)
                )

        return corrupt

    @pytest.fixture
    def outage(self, postgres_server: PostgresServer) -> Callable[[], AbstractContextManager[None]]:
        return stopped_between(postgres_server.stop_postgres, postgres_server.start)


class TestPostgresEventLogThroughPgBouncer(TestPostgresEventLog):
    bouncer = True


class TestSQLiteEventLogAcrossProcesses(EventLogProcessConformance):
    @pytest.fixture
    def log_place(self, tmp_path: Path) -> tuple[str, str]:
        return "rxreact:SQLiteEventLog", str(tmp_path / "runs.db")


class TestRedisEventLogAcrossProcesses(EventLogProcessConformance):
    @pytest.fixture
    def log_place(self, redis_server: RedisServer) -> tuple[str, str]:
        import redis

        with redis.Redis.from_url(redis_server.url) as client:
            client.flushdb()
        return "rxreact:RedisEventLog", redis_server.url


class TestRedisClusterEventLogAcrossProcesses(EventLogProcessConformance):
    @pytest.fixture
    def log_place(self, redis_cluster: LocalCluster) -> tuple[str, str]:
        redis_cluster.flush()
        return "durable_logs:open_cluster_log", redis_cluster.url


class TestPostgresEventLogAcrossProcesses(EventLogProcessConformance):
    @pytest.fixture
    def log_place(self, postgres_server: PostgresServer) -> tuple[str, str]:
        return "durable_logs:open_log", postgres_place(postgres_server)
