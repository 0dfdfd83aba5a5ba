"""The databases of the many-workers benchmark: each one started, named to ``rxreact serve``
and read for what the load cost it.

Every backend is a context manager yielding a :class:`Backend`: the ``rxreact serve``
arguments that put the memory and the event log in it, and :meth:`Backend.server_stats`, the
database's own counters (a snapshot; the driver keeps the difference over the load):

- ``memory``: the baseline, one worker, runs in an :class:`~rxreact.InMemoryEventLog`
  (conversations in a SQLite file, as ``rxreact serve`` keeps them by default);
- ``sqlite``: the event log and the memory in two SQLite files on local disk; the bytes are
  the pages in use (``page_count - freelist_count``, WAL included, as a reader sees them);
- ``redis``: one ``redis-server`` (the tests' :mod:`redis_server`): commands from
  ``INFO commandstats`` (a script's own commands included), bytes from ``used_memory``, the
  server's CPU from ``/proc``;
- ``redis-cluster``: the tests' three-master cluster (:mod:`redis_cluster`), the same counters
  summed over the masters; only where ``rxreact serve`` has ``--redis-cluster``;
- ``postgres``: the tests' PostgreSQL 15 (:mod:`postgres_server`) with ``pg_stat_statements``
  preloaded: statements (its ``calls``, ``BEGIN``/``COMMIT`` included), transactions
  (``pg_stat_database.xact_commit``), bytes from ``pg_database_size``, CPU: the postmaster's
  and its backends' (a backend that exited during the load takes its CPU with it).

The servers come from ``tests/`` (their helpers skip with pytest outside a test only when the
binaries are missing, which :func:`available` checks first).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks._harness import ROOT

BACKENDS = ("memory", "sqlite", "redis", "redis-cluster", "postgres")
POSTGRES_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass
class Backend:
    name: str
    serve_args: list[str]
    server_stats: Callable[[], dict[str, float]]
    """The database's counters now: ``commands``, ``transactions`` (Postgres), ``bytes``,
    ``cpu_s`` (the server processes')."""
    memory: Callable[[], Any]
    """A new chat memory on the database the workers use (the caller closes it)."""


def _tests_importable() -> None:
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def has_cluster_flag() -> bool:
    """Whether ``rxreact serve`` takes ``--redis-cluster`` (an older checkout does not)."""
    from rxreact.serve import cli

    return "redis_cluster" in Path(cli.__file__).read_text()


def available(name: str) -> str | None:
    """Why ``name`` cannot be measured here, or None."""
    if name in ("redis", "redis-cluster") and not shutil.which("redis-server"):
        return "no redis-server"
    if name == "redis-cluster" and not has_cluster_flag():
        return "rxreact serve has no --redis-cluster yet"
    if name == "postgres" and not (POSTGRES_BIN / "initdb").exists():
        return f"no PostgreSQL in {POSTGRES_BIN}"
    return None


def _sqlite_bytes(*paths: Path) -> dict[str, float]:
    used = 0
    for path in paths:
        if path.exists():
            with contextlib.closing(sqlite3.connect(path, timeout=30)) as db:
                pages = db.execute("PRAGMA page_count").fetchone()[0]
                free = db.execute("PRAGMA freelist_count").fetchone()[0]
                used += (pages - free) * db.execute("PRAGMA page_size").fetchone()[0]
    return {"bytes": float(used)}


def cpu_s(pid: int, *, children: bool = False) -> float:
    """A process's CPU time (user + system, from ``/proc``), and its children's (Postgres
    backends are children of the postmaster)."""
    pids = [pid]
    if children:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                        pids.append(int(entry.name))
                except (OSError, IndexError, ValueError):
                    pass  # it ended meanwhile
    total = 0.0
    for one in pids:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _redis_stats(ports: list[int], pids: list[int]) -> dict[str, float]:
    import redis

    commands = used = 0.0
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port) as client:
            stats = client.info("commandstats")
            commands += sum(
                entry["calls"]
                for name, entry in stats.items()
                if name not in ("cmdstat_info", "cmdstat_cluster|info", "cmdstat_cluster|nodes")
            )
            used += client.info("memory")["used_memory"]
    return {"commands": commands, "bytes": used, "cpu_s": sum(cpu_s(pid) for pid in pids)}


def _postgres_stats(dsn: str, pid: int) -> dict[str, float]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        calls = conn.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database() "
            "AND s.query NOT LIKE '%pg_stat%'"
        ).fetchone()
        row = conn.execute(
            "SELECT xact_commit, pg_database_size(current_database()) FROM pg_stat_database "
            "WHERE datname = current_database()"
        ).fetchone()
    assert calls is not None and row is not None
    return {
        "commands": float(calls[0]),
        "transactions": float(row[0]),
        "bytes": float(row[1]),
        "cpu_s": cpu_s(pid, children=True),
    }


@contextlib.contextmanager
def _postgres() -> Iterator[Backend]:
    _tests_importable()
    from postgres_server import PostgresServer

    # A directory of its own under /tmp: the server runs as the postgres user (as root), who
    # must reach it, and the benchmark's own directory is root's alone.
    with tempfile.TemporaryDirectory(prefix="rxreact-mw-pg-") as workdir:
        server = PostgresServer(Path(workdir))
        with _started(server) as backend:
            yield backend


@contextlib.contextmanager
def _started(server: Any) -> Iterator[Backend]:
    # Read by the server at start: pg_stat_statements needs its shared memory from the start.
    with (server.data / "postgresql.auto.conf").open("a") as conf:
        conf.write("shared_preload_libraries = 'pg_stat_statements'\nmax_connections = 300\n")
    try:
        server.start()
        import psycopg

        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        args = ["--event-log", dsn, "--memory", dsn]
        pid = server.postgres.pid
        from rxreact import PostgresChatMemory

        yield Backend(
            "postgres", args, lambda: _postgres_stats(dsn, pid), lambda: PostgresChatMemory(dsn)
        )
    finally:
        server.stop()


@contextlib.contextmanager
def open_backend(name: str, workdir: Path) -> Iterator[Backend]:
    """``name``'s database, started in ``workdir`` and stopped on exit."""
    from rxreact import RedisChatMemory, SQLiteChatMemory

    if name in ("memory", "sqlite"):
        log, chats = workdir / "runs.sqlite3", workdir / "chats.sqlite3"
        args = ["--memory", str(chats)] + (["--event-log", str(log)] if name == "sqlite" else [])
        yield Backend(
            name, args, lambda: _sqlite_bytes(log, chats), lambda: SQLiteChatMemory(chats)
        )
    elif name == "redis":
        _tests_importable()
        from redis_server import running_redis_server

        with running_redis_server() as server:
            ports, pids, url = [server.port], [server.process.pid], server.url
            stats = lambda: _redis_stats(ports, pids)  # noqa: E731
            yield Backend(name, ["--redis", url], stats, lambda: RedisChatMemory(url))
    elif name == "redis-cluster":
        _tests_importable()
        from redis_cluster import running_redis_cluster

        with running_redis_cluster() as cluster:
            ports = [node.port for node in cluster.nodes]
            pids = [node.process.pid for node in cluster.nodes]
            args, url = ["--redis", cluster.url, "--redis-cluster"], cluster.url
            stats = lambda: _redis_stats(ports, pids)  # noqa: E731
            memory = lambda: RedisChatMemory(url, cluster=True)  # noqa: E731
            yield Backend(name, args, stats, memory)
    elif name == "postgres":
        with _postgres() as backend:
            yield backend
    else:
        raise ValueError(f"unknown backend {name!r}; one of {', '.join(BACKENDS)}")


def uptime() -> str:
    """The machine's load, as ``uptime`` prints it."""
    done = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return done.stdout.strip()
