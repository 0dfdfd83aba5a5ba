"""What only the Postgres backends have to show, on a real postgres and a real pgbouncer in
transaction mode: the schema made once by workers starting together, refused when it is not
ours or newer, pools owned or borrowed, every transaction's own timeouts, following through
PgBouncer by polling, one listening connection per process, retention in bounded batches, and
claims that read only the runs that are due."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from postgres_server import PostgresServer
from test_runs import ANSWER, Collector

from rxreact import (
    ChatMemoryError,
    ConfigurationError,
    PostgresChatMemory,
    PostgresEventLog,
    ReactAgent,
    RunError,
    follow,
)
from rxreact.events import TextDelta
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.runs.postgres import log as log_module
from rxreact.tools.tool import tool


@pytest.fixture
def place(postgres_server: PostgresServer) -> tuple[str, str]:
    """A direct DSN and a table prefix of this test's own."""
    return postgres_server.dsn(), postgres_server.new_prefix()


@pytest.fixture
def logs(place: tuple[str, str]) -> Iterator[Any]:
    """Make PostgresEventLogs on this test's tables (closed at the end)."""
    made: list[PostgresEventLog] = []

    def make(dsn: str | None = None, **options: Any) -> PostgresEventLog:
        options.setdefault("min_size", 1)
        log = PostgresEventLog(dsn or place[0], table_prefix=place[1], **options)
        made.append(log)
        return log

    yield make
    for log in made:
        log.close()


def sql(dsn: str, statement: str, *args: Any) -> list[Any]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(statement, args)
        return cursor.fetchall() if cursor.description else []


def test_workers_starting_at_once_on_an_empty_database_all_work(place: tuple[str, str]) -> None:
    dsn, prefix = place
    start = threading.Barrier(6)
    made: list[Any] = []
    errors: list[BaseException] = []

    def open_one(i: int) -> None:
        try:
            start.wait(10)
            kind = PostgresEventLog if i % 2 else PostgresChatMemory
            made.append(kind(dsn, table_prefix=prefix, min_size=1))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=open_one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    try:
        assert not errors and len(made) == 6
        versions = sql(dsn, f"SELECT component, version FROM {prefix}schema ORDER BY 1")
        assert versions == [("chat_memory", 1), ("event_log", 1)]
    finally:
        for each in made:
            each.close()


def test_tables_that_are_not_ours_or_are_newer_are_refused(place: tuple[str, str]) -> None:
    dsn, prefix = place
    sql(dsn, f"CREATE TABLE {prefix}turns (id int)")
    with pytest.raises(ChatMemoryError, match="not an rxreact"):
        PostgresChatMemory(dsn, table_prefix=prefix)
    PostgresEventLog(dsn, table_prefix=prefix, min_size=1).close()  # another component: fine
    sql(dsn, f"UPDATE {prefix}schema SET version = 99 WHERE component = 'event_log'")
    with pytest.raises(RunError, match="newer"):
        PostgresEventLog(dsn, table_prefix=prefix)
    with pytest.raises(ValueError, match="table_prefix"):
        PostgresEventLog(dsn, table_prefix="x; DROP TABLE y")


def test_a_dsn_pool_is_closed_with_its_owner_and_a_callers_pool_stays_open(
    place: tuple[str, str],
) -> None:
    from psycopg_pool import ConnectionPool

    dsn, prefix = place
    memory = PostgresChatMemory(dsn, table_prefix=prefix, min_size=1)
    memory.close()
    with pytest.raises(ChatMemoryError, match="closed"):
        memory.load("c")
    with ConnectionPool(dsn, min_size=1, open=True) as pool:
        borrowed = PostgresChatMemory(pool, table_prefix=prefix)
        borrowed.append("c", [])
        borrowed.close()
        assert not pool.closed
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.prepare_threshold == 5  # psycopg's default: given back as it was lent
        with PostgresChatMemory(pool, table_prefix=prefix) as again:
            assert again.load("c") == []


@pytest.mark.parametrize("bouncer", [False, True])
def test_every_transaction_sets_its_own_timeouts_and_leaves_nothing_behind(
    postgres_server: PostgresServer, bouncer: bool
) -> None:
    from rxreact._postgres import PostgresPool

    pool = PostgresPool(
        postgres_server.dsn(bouncer=bouncer), user="test", error_type=RunError, min_size=1
    )
    try:
        with pool.transaction("look") as cur:
            cur.execute(
                "SELECT current_setting('lock_timeout'), "
                "current_setting('idle_in_transaction_session_timeout')"
            )
            assert cur.fetchone() == ("5s", "5s")
        with pool.read("look again") as cur:  # SET LOCAL: gone with its transaction
            cur.execute("SELECT current_setting('lock_timeout')")
            assert cur.fetchone() == ("0",)
    finally:
        pool.close()


def test_followed_through_pgbouncer_by_polling_every_event_arrives(
    postgres_server: PostgresServer, logs: Any
) -> None:
    bouncer = postgres_server.dsn(bouncer=True)
    owner, reader = logs(bouncer), logs(bouncer, poll=0.02)  # no listen_dsn: polls
    gate = threading.Event()

    @tool
    def wait_for_gate() -> str:
        """Waits for the test."""
        assert gate.wait(10)
        return "open"

    model = ScriptedModel([tool_call_reply(("wait_for_gate", {})), text_reply(ANSWER, size=3)])
    run = ReactAgent(model, [wait_for_gate], event_log=owner).start("q", conversation_id="c")
    followed = Collector(follow(run.id, reader))
    assert reader.active_run("c") == run.id
    gate.set()
    assert followed.wait().error is None and followed.text == ANSWER
    assert followed.seqs == list(range(1, len(followed.seqs) + 1))
    assert followed.events == Collector(run.events()).wait().events


def test_a_process_following_twenty_runs_holds_its_pool_and_one_listening_connection(
    postgres_server: PostgresServer, logs: Any
) -> None:
    owner = logs()
    writers = [owner.begin(f"run-{i}", None, lambda: None) for i in range(20)]
    named = postgres_server.dsn() + "?application_name=follower20"
    follower = logs(named, listen_dsn=named, min_size=4)
    collected = [Collector(follow(f"run-{i}", follower)) for i in range(20)]
    for writer in writers:
        writer.append(TextDelta(seq=1, round=1, delta="a"))
        writer.end()
    for each in collected:
        assert each.wait().error is None and each.seqs == [1]
    (held,) = sql(
        postgres_server.dsn(),
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'follower20'",
    )
    assert held[0] <= 4 + 1


def test_ended_runs_are_deleted_in_bounded_batches(
    place: tuple[str, str], logs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn, prefix = place
    log = logs(ttl=0.001)
    for i in range(5):
        writer = log.begin(f"r{i}", None, lambda: None)
        writer.append(TextDelta(seq=1, round=1, delta="a"))
        writer.end()
    assert log.flush()
    monkeypatch.setattr(log_module, "RETENTION_BATCH", 2)
    counts = []
    for _ in range(3):
        log._heartbeat()
        counts.append(sql(dsn, f"SELECT count(*) FROM {prefix}runs")[0][0])
    assert counts == [3, 1, 0]
    assert sql(dsn, f"SELECT count(*) FROM {prefix}entries") == [(0,)]


def test_a_claim_reads_only_due_runs_however_many_are_parked(
    place: tuple[str, str], logs: Any
) -> None:
    dsn, prefix = place
    log = logs()
    # Half of them with a deadline an hour away: in the index, but not in the range.
    sql(
        dsn,
        f"INSERT INTO {prefix}runs (run_id, state, lapse, deadline) SELECT 'parked-' || n, "
        "'parked', clock_timestamp() - interval '1 hour', CASE WHEN n %% 2 = 0 THEN "
        "extract(epoch FROM clock_timestamp()) + 3600 END FROM generate_series(1, 20000) AS n",
    )
    sql(dsn, f"ANALYZE {prefix}runs")
    for name in ("due", "claimable"):
        statement = log._sql[name].replace("%s", "100").replace("SKIP LOCKED", "")
        text = "\n".join(row[0] for row in sql(dsn, "EXPLAIN " + statement))
        assert f"{prefix}runs_due" in text and "Seq Scan" not in text, text
        # A bound of the index range, not a filter over every entry of the index.
        assert "Index Cond: (due_at <=" in text and "Filter" not in text, text
    assert log.claim_lost() == []  # parked, and nothing woke them: none is due
    sql(dsn, f"UPDATE {prefix}runs SET woken = true WHERE run_id = 'parked-7'")
    (claimed,) = log.claim_lost()
    assert claimed.run_id == "parked-7" and claimed.parked and claimed.token == 2


def test_without_the_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    with pytest.raises(ConfigurationError, match=r"rxreact\[postgres\]"):
        PostgresChatMemory("postgresql://127.0.0.1/none")
    with pytest.raises(ConfigurationError, match=r"rxreact\[postgres\]"):
        PostgresEventLog("postgresql://127.0.0.1/none")
