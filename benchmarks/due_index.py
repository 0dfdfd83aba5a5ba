"""``python -m benchmarks.due_index``: what a claim tick costs with 100 and with 100,000 parked
runs (nobody decided, deadline an hour away), on SQLite and on Postgres.

A worker's ``resume_runs()`` calls ``event_log.claim_lost()`` on every tick; parked runs wait
for people, for days maybe, so a tick must not read them. Both logs keep a ``due_at`` column
with a partial index (:mod:`rxreact.runs.sqlite._store`, :mod:`rxreact.runs.postgres._store`),
and a tick with nothing due is one index probe. The parked rows are written straight into the
tables (as many parks would leave them); each tick is timed alone, median of ``--ticks``.
For comparison, the SQLite row "v1 query" times the claim of schema version 1 (a scan of every
parked run: its JSON ``info`` and a decisions lookup per run) on the same file.

``--dsn postgresql://...`` uses that database (tables prefixed ``bench_due_<pid>_``, dropped
after); without it a throw-away server is started as the tests start one
(``tests/postgres_server.py``; PostgreSQL 15 in ``/usr/lib/postgresql/15/bin``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from rxreact import PostgresEventLog, SQLiteEventLog

ROOT = Path(__file__).resolve().parent.parent
SIZES = (100, 100_000)

# Schema version 1's claim (before the due index), kept here to measure what it cost.
_V1_CLAIMABLE = (
    "SELECT run_id, conversation_id, token, info FROM runs r WHERE r.beat < ?1 AND "
    "(r.state = 'running' OR (r.state = 'parked' AND ("
    "json_extract(r.info, '$.deadline') < ?2 OR EXISTS (SELECT 1 FROM decisions d "
    "WHERE d.run_id = r.run_id AND d.at >= json_extract(r.info, '$.since'))))) LIMIT 1"
)


def median_us(tick: Callable[[], object], ticks: int) -> float:
    """The median of ``ticks`` timings of ``tick()``, in microseconds (after one warm-up)."""
    tick()
    times = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        tick()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def sqlite_ticks(n: int, ticks: int) -> dict[str, float]:
    """Claim ticks on a file holding ``n`` parked runs nothing woke."""
    with tempfile.TemporaryDirectory(prefix="rxreact-due-") as workdir:
        path = Path(workdir) / "runs.db"
        SQLiteEventLog(path).close()  # the schema
        now = time.time()
        info = json.dumps({"since": now - 60, "deadline": now + 3600})
        with sqlite3.connect(path) as db:
            db.executemany(
                "INSERT INTO runs (run_id, owner, state, started, beat, lost_after, deadline, "
                "info) VALUES (?, 'gone', 'parked', ?, 0, 30, ?, ?)",
                ((f"parked-{i}", now - 60, now + 3600, info) for i in range(n)),
            )
            db.execute("ANALYZE")
        with SQLiteEventLog(path) as log:
            if log.claim_lost():
                raise AssertionError("a parked run nothing woke was claimed")
            claim = median_us(log.claim_lost, ticks)
        with sqlite3.connect(path) as db:
            v1 = median_us(
                lambda: db.execute(_V1_CLAIMABLE, (time.time() - 30, time.time())).fetchall(),
                max(ticks // 10, 3),
            )
    return {"claim_us": claim, "v1_query_us": v1}


@contextlib.contextmanager
def postgres_dsn(dsn: str | None) -> Iterator[str]:
    """``dsn``, or a throw-away server's."""
    if dsn is not None:
        yield dsn
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from postgres_server import running_postgres_server

    with running_postgres_server() as server:
        yield server.dsn()


def postgres_ticks(dsn: str, n: int, ticks: int) -> dict[str, float]:
    """Claim ticks on tables holding ``n`` parked runs nothing woke."""
    import psycopg

    prefix = f"bench_due_{os.getpid()}_{n}_"
    with psycopg.connect(dsn, autocommit=True) as conn:
        with PostgresEventLog(dsn, table_prefix=prefix, min_size=1):
            pass  # the tables
        try:
            conn.execute(
                f"INSERT INTO {prefix}runs (run_id, owner, state, lapse, deadline) "
                "SELECT 'parked-' || i, 'gone', 'parked', clock_timestamp() - interval '1 hour', "
                "extract(epoch FROM clock_timestamp()) + 3600 FROM generate_series(1, %s) AS i",
                (n,),
            )
            conn.execute(f"ANALYZE {prefix}runs")
            with PostgresEventLog(dsn, table_prefix=prefix, min_size=1) as log:
                if log.claim_lost():
                    raise AssertionError("a parked run nothing woke was claimed")
                claim = median_us(log.claim_lost, ticks)
        finally:
            for table in ("runs", "entries", "checkpoints", "decisions", "cancels", "schema"):
                conn.execute(f"DROP TABLE IF EXISTS {prefix}{table}")
    return {"claim_us": claim}


def measure(
    ticks: int, sizes: tuple[int, ...] = SIZES, dsn: str | None = None, postgres: bool = True
) -> dict[str, Any]:
    """Every backend at every size: ``{backend: {n: timings}}``."""
    results: dict[str, Any] = {"sqlite": {n: sqlite_ticks(n, ticks) for n in sizes}}
    if postgres:
        with postgres_dsn(dsn) as where:
            results["postgres"] = {n: postgres_ticks(where, n, ticks) for n in sizes}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=200, help="claim ticks timed per size")
    parser.add_argument("--dsn", help="a Postgres database to use (default: a throw-away one)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    results = measure(args.ticks, dsn=args.dsn, postgres=not args.no_postgres)
    print(f"claim tick, median of {args.ticks} (us), parked runs nothing woke:")
    print(f"{'backend':<28}" + "".join(f"{n:>12,}" for n in SIZES))
    for backend, by_size in results.items():
        print(f"{backend:<28}" + "".join(f"{by_size[n]['claim_us']:>12.1f}" for n in SIZES))
    v1 = results["sqlite"]
    print(
        f"{'sqlite, v1 query (no index)':<28}"
        + "".join(f"{v1[n]['v1_query_us']:>12.1f}" for n in SIZES)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
