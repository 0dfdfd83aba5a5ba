"""One worker of the many-workers benchmark: ``rxreact serve`` with a recording tool and
round-trip counters.

``python -m benchmarks._serve_worker SERVE_ARGS...`` is ``rxreact serve SERVE_ARGS...`` (run as
a module, so ``--tools benchmarks._serve_worker:get_weather`` imports from the repository),
with two additions made before rxreact is imported:

- :func:`get_weather` appends one line per execution, ``run_id round city pid``, to the file
  ``$RXREACT_BENCH_TOOL_LOG`` opened ``O_APPEND`` (one ``write`` a line: lines of concurrent
  processes never interleave), so the driver can check that no call ran twice, across a
  SIGKILL and a takeover. The mock gives every run the same call ids (``call_0``,
  ``call_1``), so a call is named by its run, round and argument.
- Every database round trip the process makes is counted: each ``sqlite3`` statement (a
  connection trace callback, by file and statement kind), each redis-py send (a pipeline or
  a script is one) and each psycopg cursor ``execute`` (not its ``BEGIN``/``COMMIT``:
  ``pg_stat_statements`` counts those on the server). ``SIGUSR1`` writes the counts to
  ``$RXREACT_BENCH_COUNTS/<pid>.json`` (written aside and renamed: the driver never reads
  half a file), so the driver takes them before and after the load and keeps the difference.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

from rxreact import RunContext, tool

TOOL_LOG_ENV = "RXREACT_BENCH_TOOL_LOG"
COUNTS_ENV = "RXREACT_BENCH_COUNTS"

_counts: collections.Counter[str] = collections.Counter()
_counts_lock = threading.Lock()
_tool_log: list[int] = []


def _count(what: str) -> None:
    with _counts_lock:
        _counts[what] += 1


@tool
def get_weather(ctx: RunContext[None], city: str) -> str:
    """Get the current weather for a city."""
    if not _tool_log:
        _tool_log.append(os.open(os.environ[TOOL_LOG_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT))
    os.write(_tool_log[0], f"{ctx.run_id} {ctx.round} {city} {os.getpid()}\n".encode())
    return f"The weather in {city} is sunny, 25 C."


def _trace_sqlite() -> None:
    connect = sqlite3.connect

    def traced(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection: sqlite3.Connection = connect(database, *args, **kwargs)
        name = f"sqlite:{Path(str(database)).name}"

        def trace(statement: str) -> None:  # by kind: the readers' polls are SELECTs
            _count(f"{name}:{statement.lstrip().split(' ', 1)[0].upper()}")

        connection.set_trace_callback(trace)
        return connection

    sqlite3.connect = traced  # type: ignore[assignment]


def _count_sends(cls: Any, method: str, name: str) -> None:
    original = getattr(cls, method)

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        _count(name)
        return original(self, *args, **kwargs)

    setattr(cls, method, counted)


def _count_network_clients() -> None:
    try:
        import redis.connection

        _count_sends(redis.connection.AbstractConnection, "send_packed_command", "redis")
    except ImportError:
        pass
    try:
        import psycopg

        # Connection.execute is a cursor's execute: counting the cursor counts each once.
        _count_sends(psycopg.Cursor, "execute", "postgres")
        _count_sends(psycopg.Cursor, "executemany", "postgres")
    except ImportError:
        pass


def _write_counts(_signum: int, _frame: Any) -> None:
    folder = Path(os.environ[COUNTS_ENV])
    with _counts_lock:
        counts = dict(_counts)
    aside = folder / f".{os.getpid()}.json"
    aside.write_text(json.dumps(counts))
    aside.rename(folder / f"{os.getpid()}.json")


def main(argv: list[str]) -> int:
    _trace_sqlite()
    _count_network_clients()
    if os.environ.get(COUNTS_ENV):
        signal.signal(signal.SIGUSR1, _write_counts)
    from rxreact.cli import main as rxreact_main

    return rxreact_main(["serve", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
