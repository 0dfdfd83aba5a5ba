"""The due index of the SQL event logs: a claim reads only the runs that are due
(running runs whose owner stopped beating, parked runs a decision woke or whose deadline
passed), through an index, so parked runs nothing woke cost it nothing however many there
are. The timings are in benchmarks/due_index.py; here, the plans and what is due."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from postgres_server import PostgresServer

from rxreact import PostgresEventLog, SQLiteEventLog
from rxreact.events import ToolApprovalRequested, ToolCallStarted
from rxreact.runs.parking import ParkingWriter
from rxreact.runs.sqlite._store import _SCHEMA, APPLICATION_ID, SCHEMA_VERSION
from rxreact.runs.sqlite._takeover import CLAIMABLE

Log = SQLiteEventLog | PostgresEventLog


@pytest.fixture(params=["sqlite", "postgres"])
def open_log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Open logs of one backend on one store (closed at the end, if the test did not)."""
    made: list[Log] = []
    if request.param == "sqlite":

        def make(**options: Any) -> Log:
            made.append(SQLiteEventLog(tmp_path / "runs.db", **options))
            return made[-1]

    else:
        server: PostgresServer = request.getfixturevalue("postgres_server")
        dsn, prefix = server.dsn(), server.new_prefix()

        def make(**options: Any) -> Log:
            made.append(PostgresEventLog(dsn, table_prefix=prefix, min_size=1, **options))
            return made[-1]

    yield make
    for log in made:
        log.close()


def park(log: Log, run_id: str, deadline: float | None) -> None:
    """Begin ``run_id`` and park it on the approval of call ``k1``, committed."""
    writer = log.begin(run_id, f"c-{run_id}", lambda: None)
    assert isinstance(writer, ParkingWriter)
    writer.append(ToolCallStarted(seq=1, round=1, index=0, call_id="k1", name="pay"))
    writer.park(deadline)  # with the next event: the one that leaves the run waiting
    writer.append(ToolApprovalRequested(seq=2, round=1, call_id="k1", name="pay", arguments={}))
    assert writer.parked and log.flush()


def test_a_decision_makes_a_parked_run_of_a_gone_owner_due(open_log: Any) -> None:
    owner = open_log()
    park(owner, "asleep", None)
    park(owner, "decided", None)
    owner.close()  # stopped cleanly: its parked runs are let go, not lost
    other = open_log(lost_after=0.3)
    assert other.claim_lost() == []  # nothing woke them

    other.decide("decided", "k1", True, None)

    (claimed,) = other.claim_lost()
    assert (claimed.run_id, claimed.parked, claimed.token) == ("decided", True, 2)
    assert claimed.decisions == {"k1": (True, None)}
    assert [e.type for e in claimed.events] == ["tool_call_started", "tool_approval_requested"]
    assert other.claim_lost() == []  # claimed: beating again, and "asleep" still sleeps


def test_a_parked_run_is_due_at_its_deadline_not_before(open_log: Any) -> None:
    owner = open_log()
    park(owner, "past", time.time() - 1.0)
    park(owner, "future", time.time() + 3600.0)
    owner.close()

    (claimed,) = open_log().claim_lost()

    assert claimed.run_id == "past" and claimed.parked
    assert claimed.deadline is not None and claimed.deadline < time.time()


def test_the_sqlite_claim_reads_the_due_index(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with SQLiteEventLog(path) as log:
        with sqlite3.connect(path) as db:
            db.executemany(
                "INSERT INTO runs (run_id, state, started, beat, lost_after) "
                "VALUES (?, 'parked', 0, 0, 30)",
                [(f"parked-{n}",) for n in range(5000)],
            )
            db.execute("ANALYZE")
            plan = " / ".join(
                row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + CLAIMABLE, (0, 1))
            )
        assert "USING INDEX runs_due (due_at<?)" in plan and "SCAN" not in plan, plan
        assert log.claim_lost() == []  # 5,000 parked runs, none due
        with sqlite3.connect(path) as db:
            db.execute("UPDATE runs SET woken = 1 WHERE run_id = 'parked-7'")
        (claimed,) = log.claim_lost()
    assert claimed.run_id == "parked-7" and claimed.parked and claimed.token == 2


def test_a_version_1_file_is_migrated_with_its_parked_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute("PRAGMA user_version = 1")
        db.executescript(_SCHEMA)
        parked = [
            ("woken", json.dumps({"since": 100.0, "deadline": None})),
            ("decided-before", json.dumps({"since": 100.0, "deadline": None})),
            ("expired", json.dumps({"since": 100.0, "deadline": 200.0})),
            ("asleep", json.dumps({"since": 100.0, "deadline": time.time() + 3600})),
        ]
        db.executemany(
            "INSERT INTO runs (run_id, owner, state, started, beat, info) "
            "VALUES (?, 'gone', 'parked', 100, 100, ?)",
            parked,
        )
        db.executemany(
            "INSERT INTO decisions (run_id, call_id, approved, at) VALUES (?, 'k1', 1, ?)",
            [("woken", 150.0), ("decided-before", 50.0)],
        )

    with SQLiteEventLog(path, lost_after=5.0) as log:
        claimed = sorted(lost.run_id for lost in log.claim_lost())

    assert claimed == ["expired", "woken"]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (2,)
        rows = db.execute(
            "SELECT run_id, deadline IS NOT NULL, woken, lost_after, info FROM runs "
            "WHERE run_id IN ('decided-before', 'asleep') ORDER BY run_id"
        ).fetchall()
    assert rows == [("asleep", 1, 0, 5.0, None), ("decided-before", 0, 0, 5.0, None)]


def test_a_file_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    from rxreact import RunError

    path = tmp_path / "runs.db"
    SQLiteEventLog(path).close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(RunError, match="newer than this rxreact's"):
        SQLiteEventLog(path)


def test_the_benchmark_runs(postgres_server: PostgresServer) -> None:
    from benchmarks import due_index

    results = due_index.measure(3, (10, 200), dsn=postgres_server.dsn())

    assert set(results) == {"sqlite", "postgres"}
    assert all(t["claim_us"] > 0 for by_size in results.values() for t in by_size.values())
    assert results["sqlite"][200]["v1_query_us"] > 0
