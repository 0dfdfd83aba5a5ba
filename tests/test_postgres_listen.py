"""One listening connection per process and listen DSN ("a process following 20 runs
holds at most the pool's minimum plus that one connection"), shared by the Postgres event logs
of the process, on a real postgres: counted from ``pg_stat_activity``, kept while any log
listens, closed with the last, made again when the server drops it.

The followers poll every minute and beat every 20 s, so what arrives within the collectors'
10 s came by a notification."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from postgres_server import PostgresServer
from test_runs import Collector
from test_runs_postgres import sql

from rxreact import PostgresEventLog, follow
from rxreact.events import TextDelta
from rxreact.testing.conformance._event_log import wait_until

QUIET = {"poll": 60.0, "lost_after": 60.0}
"""Followers that read only when notified (within a test's time)."""


@pytest.fixture
def logs(postgres_server: PostgresServer) -> Iterator[Any]:
    """Make PostgresEventLogs (closed at the end, if the test did not)."""
    made: list[PostgresEventLog] = []

    def make(where: Any, prefix: str, **options: Any) -> PostgresEventLog:
        if isinstance(where, str):
            options.setdefault("min_size", 1)
        made.append(PostgresEventLog(where, table_prefix=prefix, **options))
        return made[-1]

    yield make
    for log in made:
        log.close()


def listening(server: PostgresServer, name: str) -> list[int]:
    """The pids of the connections of application ``name`` that listen (their last
    statement was a LISTEN, or an UNLISTEN of a channel another log still listens on)."""
    rows = sql(
        server.dsn(),
        "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND query LIKE '%%LISTEN %%'",
        name,
    )
    return [row[0] for row in rows]


def held(server: PostgresServer, name: str) -> int:
    rows = sql(
        server.dsn(), "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", name
    )
    return int(rows[0][0])


def followed_one(owner: PostgresEventLog, follower: PostgresEventLog, run_id: str) -> Collector:
    """A run begun by ``owner`` and followed by ``follower`` before its one event is written."""
    writer = owner.begin(run_id, None, lambda: None)
    collected = Collector(follow(run_id, follower))
    writer.append(TextDelta(seq=1, round=1, delta="a"))
    writer.end()
    return collected


def test_twenty_runs_followed_in_two_logs_hold_the_pool_and_one_listening_connection(
    postgres_server: PostgresServer, logs: Any
) -> None:
    from psycopg_pool import ConnectionPool

    dsn = postgres_server.dsn()
    prefixes = [postgres_server.new_prefix(), postgres_server.new_prefix()]
    owners = [logs(dsn, prefix) for prefix in prefixes]
    writers = [[owner.begin(f"run-{i}", None, lambda: None) for i in range(10)] for owner in owners]
    named = dsn + "?application_name=followers2"
    with ConnectionPool(named, min_size=4, max_size=4, open=True) as pool:
        followers = [logs(pool, prefix, listen_dsn=named, **QUIET) for prefix in prefixes]
        collected = [
            Collector(follow(f"run-{i}", follower)) for follower in followers for i in range(10)
        ]
        assert len(listening(postgres_server, "followers2")) == 1
        for writer in [w for each in writers for w in each]:
            writer.append(TextDelta(seq=1, round=1, delta="a"))
            writer.end()
        for each in collected:
            assert each.wait().error is None and each.seqs == [1]
        assert held(postgres_server, "followers2") <= 4 + 1

        followers[0].close()  # the other log still listens, on the same connection
        (pid,) = listening(postgres_server, "followers2")
        late = followed_one(owners[1], followers[1], "late")
        assert late.wait().error is None and late.seqs == [1]
        assert listening(postgres_server, "followers2") == [pid]

        followers[1].close()  # the last one: the connection is closed
        assert wait_until(lambda: not listening(postgres_server, "followers2"))
        assert not pool.closed  # the caller's


def test_a_dropped_listening_connection_is_made_again(
    postgres_server: PostgresServer, logs: Any
) -> None:
    dsn, prefix = postgres_server.dsn(), postgres_server.new_prefix()
    owner = logs(dsn, prefix)
    named = dsn + "?application_name=relisten"
    follower = logs(named, prefix, listen_dsn=named, **QUIET)
    assert followed_one(owner, follower, "first").wait().error is None
    (pid,) = listening(postgres_server, "relisten")

    sql(dsn, "SELECT pg_terminate_backend(%s)", pid)

    assert wait_until(lambda: listening(postgres_server, "relisten") not in ([], [pid]))
    second = followed_one(owner, follower, "second")
    assert second.wait().error is None and second.seqs == [1]
