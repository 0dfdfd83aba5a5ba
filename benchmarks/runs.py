"""Workload 7: what a hot run costs per chunk, by event log and number of subscribers.

The bench conversation (two tool calls, then an N-chunk answer) through one child process per
variant, one warm-up then timed sessions, round-robin repeats; the ratio column divides by the
plain cold ``stream()`` of the same repeat (the same process layout, the same answer check):

- ``cold``: ``agent.stream(q)`` with one subscriber (the baseline);
- ``memory_1`` / ``memory_100``: ``agent.start(q)`` on the default ``InMemoryEventLog``,
  with 1 or 100 subscribers of ``run.events()``, every one checked word by word;
- ``redis_1``: ``RedisEventLog``: every event also goes to Redis (pipelined ``XADD``), one
  local subscriber;
- ``redis_follow_100``: the same run followed by 100 subscribers through Redis (another
  ``RedisEventLog`` client in the same process, i.e. what a follower process pays, plus
  the owner's writes): one reader thread, ``XREAD BLOCK`` for all of them.
- ``sqlite_1`` / ``sqlite_follow_100``: the same two on a ``SQLiteEventLog`` file (in a
  temporary directory): every event and checkpoint is committed to the file; followers
  poll it from one reader thread.

Both durable logs also write the run's checkpoints (one per model response and tool result).

``python -m benchmarks.runs [--quick]`` runs it alone; it starts its own ``redis-server`` on a
free loopback port (the Redis rows are skipped without one).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks._harness import (
    MODEL,
    PROMPT,
    BenchError,
    Table,
    check_answer,
    emit,
    medians,
    mock_headers,
    mock_server,
    run_child,
)

VARIANTS = (
    "cold",
    "memory_1",
    "memory_100",
    "sqlite_1",
    "sqlite_follow_100",
    "redis_1",
    "redis_follow_100",
)
LABELS = {
    "cold": "cold agent.stream(), 1 subscriber (baseline)",
    "memory_1": "hot run, InMemoryEventLog, 1 subscriber",
    "memory_100": "hot run, InMemoryEventLog, 100 subscribers",
    "sqlite_1": "hot run, SQLiteEventLog, 1 local subscriber",
    "sqlite_follow_100": "hot run, SQLiteEventLog, 100 followers through the file",
    "redis_1": "hot run, RedisEventLog, 1 local subscriber",
    "redis_follow_100": "hot run, RedisEventLog, 100 followers through Redis",
}


def _subscribe_all(sources: list[Any], chunks: int) -> None:
    """Subscribe to every source, wait for all to complete, check every answer."""
    texts: list[list[str]] = [[] for _ in sources]
    failures: list[Exception] = []
    left = [len(sources)]
    lock = threading.Lock()
    done = threading.Event()

    def finished() -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()

    def failed(error: Exception) -> None:
        failures.append(error)
        done.set()

    for source, parts in zip(sources, texts, strict=True):

        def on_next(event: Any, parts: list[str] = parts) -> None:
            if event.type == "text_delta":
                parts.append(event.delta)

        source.subscribe(on_next, failed, finished)
    if not done.wait(300) or failures:
        raise BenchError(f"subscribers did not finish: {failures or 'deadline'}")
    for parts in texts:
        check_answer("".join(parts), chunks)


def child(argv: list[str]) -> None:
    from rxreact import ReactAgent, RedisEventLog, SQLiteEventLog, follow, tool
    from rxreact.model.openai.client import OpenAIChatModel

    variant, url, chunks, sessions = argv[0], argv[1], int(argv[2]), int(argv[3])
    redis_url = argv[4] if len(argv) > 4 else ""

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    model = OpenAIChatModel(MODEL, base_url=url, api_key="sk-x", headers=mock_headers(chunks))
    logs: list[Any] = []
    scratch = tempfile.TemporaryDirectory(prefix="rxreact-bench-sqlite-")
    if variant.startswith("redis"):
        logs = [
            RedisEventLog(redis_url, prefix="bench:"),
            RedisEventLog(redis_url, prefix="bench:"),
        ]
    elif variant.startswith("sqlite"):
        path = f"{scratch.name}/runs.db"
        logs = [SQLiteEventLog(path), SQLiteEventLog(path)]
    agent = ReactAgent(model, [get_weather], event_log=logs[0] if logs else None)

    def session() -> dict[str, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        if variant == "cold":
            _subscribe_all([agent.stream(PROMPT)], chunks)
        elif variant.endswith("_follow_100"):
            run = agent.start(PROMPT)
            _subscribe_all([follow(run.id, logs[1]) for _ in range(100)], chunks)
        else:
            run = agent.start(PROMPT)
            n = 100 if variant.endswith("_100") else 1
            _subscribe_all([run.events() for _ in range(n)], chunks)
        if logs:
            logs[0].flush()  # the writes are part of the cost
        return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}

    try:
        session()  # warm-up
        results = [session() for _ in range(sessions)]
    finally:
        for log in logs:
            log.close()
        model.close()
        scratch.cleanup()
    emit({"variant": variant, **medians(results)})


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def redis_server() -> Iterator[str | None]:
    """A throwaway ``redis-server`` on loopback (stopped by pid), or ``None`` without one."""
    executable = shutil.which("redis-server")
    if executable is None:
        yield None
        return
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="rxreact-bench-redis-") as workdir:
        proc = subprocess.Popen(
            [
                *(executable, "--port", str(port), "--bind", "127.0.0.1", "--save", ""),
                *("--appendonly", "no", "--dir", workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(0.01)  # a short pause that ends at once if it exits
            yield f"redis://127.0.0.1:{port}/0" if proc.poll() is None else None
        finally:
            proc.terminate()
            proc.wait(10)


def run(url: str, quick: bool) -> Table:
    chunks, sessions, repeats = (2000, 3, 1) if quick else (2000, 10, 3)
    per: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    with redis_server() as redis_url:
        variants = [v for v in VARIANTS if redis_url or not v.startswith("redis")]
        for _ in range(repeats):
            for variant in variants:
                args = [variant, url, str(chunks), str(sessions), redis_url or ""]
                per[variant].append(run_child("runs", args))
    cpu = {v: statistics.median(r["cpu_s"] for r in rs) for v, rs in per.items() if rs}
    wall = {v: statistics.median(r["wall_s"] for r in rs) for v, rs in per.items() if rs}
    table = Table(
        f"7. Hot runs (N={chunks}, {sessions} sessions x {repeats} repeats)",
        ["variant", "cpu us/chunk", "x cold stream", "wall ms"],
    )
    for variant in cpu:
        table.add(
            LABELS[variant],
            cpu[variant] / chunks * 1e6,
            f"{cpu[variant] / cpu['cold']:.2f}",
            wall[variant] * 1e3,
        )
    table.notes.append(
        "process CPU (all threads) per session / N, every subscriber's answer checked; "
        "Redis rows include the redis-py client work, not the server's"
    )
    table.data = {"chunks": chunks, "sessions": sessions, "repeats": repeats, "cpu_s": cpu}
    return table


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        with mock_server() as mock_url:
            print(run(mock_url, "--quick" in sys.argv).render())
