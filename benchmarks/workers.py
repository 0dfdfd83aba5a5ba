"""Workload 10: worker processes on one Redis: throughput, and what Redis adds per run.

Each worker is a process of its own (a child, as ``rxreact serve --workers`` would fork)
running ``runs`` agent runs at once against the unpaced mock (throughput-bound), then
reporting its wall time and CPU. Modes: ``none`` (no memory), ``memory`` (a
:class:`~rxreact.memory.redis.RedisChatMemory`, one conversation per run: a load and an
append each), ``log`` (``memory`` plus a :class:`~rxreact.RedisEventLog`: ``agent.start``
and the run's result). Reported: chunks per second for N = 1 and 2 workers in ``memory``
mode (wall = the slowest worker's), and each mode's CPU per run over ``none``'s.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    MODEL,
    PROMPT,
    ROOT,
    BenchError,
    Table,
    check_answer,
    emit,
    mock_headers,
)

MODES = ("none", "memory", "log")


def _work(url: str, redis_url: str, mode: str, runs: int, chunks: int) -> dict[str, Any]:
    from rxreact import ReactAgent, RedisEventLog, tool
    from rxreact.memory.redis import RedisChatMemory
    from rxreact.model.openai.client import OpenAIChatModel

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    model = OpenAIChatModel(MODEL, base_url=url, headers=mock_headers(chunks, 2))
    memory = RedisChatMemory(redis_url) if mode != "none" else None
    log = RedisEventLog(redis_url) if mode == "log" else None
    options: dict[str, Any] = {"memory": memory}
    if log is not None:
        options["event_log"] = log
    agent = ReactAgent(model, [get_weather], **options)
    agent.call(PROMPT)  # warm-up
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    answers: list[str] = []
    errors: list[Exception] = []
    lock = threading.Lock()
    done = threading.Event()
    left = [runs]

    def finish() -> None:
        with lock:
            left[0] -= 1
            if left[0] == 0:
                done.set()

    t0, c0 = time.perf_counter(), time.process_time()
    if log is not None:
        started = [
            agent.start(f"{PROMPT} [run {i}]", conversation_id=f"{tag}-{i}") for i in range(runs)
        ]
        for run in started:
            try:
                answers.append(run.result(timeout=120).answer)
            except Exception as error:
                errors.append(error)
    else:

        def subscribe(i: int) -> None:
            def on_next(event: Any) -> None:
                if type(event).__name__ == "FinalAnswer":
                    answers.append(event.text)

            def on_error(error: Exception) -> None:
                errors.append(error)
                finish()

            conversation = f"{tag}-{i}" if memory is not None else None
            agent.stream(f"{PROMPT} [run {i}]", conversation).subscribe(on_next, on_error, finish)

        for i in range(runs):
            subscribe(i)
        done.wait(120)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    correct = 0
    for answer in answers:
        try:
            check_answer(answer, chunks)
            correct += 1
        except BenchError:
            pass
    model.close()
    return {
        "mode": mode,
        "runs": runs,
        "correct": correct,
        "errors": len(errors),
        "first_error": repr(errors[0]) if errors else None,
        "wall_s": wall,
        "cpu_s": cpu,
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


_NO_PERSISTENCE = ("--save", "", "--appendonly", "no", "--dir")


def _redis(workdir: str) -> tuple[subprocess.Popen[bytes], str]:
    """A throw-away ``redis-server`` on a free loopback port (no persistence)."""
    executable = shutil.which("redis-server") or "/usr/bin/redis-server"
    port = _free_port()
    process = subprocess.Popen(
        [executable, *("--port", str(port), "--bind", "127.0.0.1"), *_NO_PERSISTENCE, workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    return process, f"redis://127.0.0.1:{port}/0"
        except OSError:
            if process.poll() is not None:
                break
        time.sleep(0.01)  # the benchmark harness, not a test: polling a server that starts
    process.kill()
    raise BenchError("redis-server did not start")


def workers(url: str, redis_url: str, mode: str, n: int, runs: int, chunks: int) -> list[Any]:
    """``n`` worker processes at once; their results."""
    args = [url, redis_url, mode, str(runs), str(chunks)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.workers", "--child", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if proc.returncode != 0 or not lines:
            raise BenchError(f"worker failed (exit {proc.returncode})")
        results.append(json.loads(lines[-1]))
    return results


def run(url: str, quick: bool, runs: int | None = None, chunks: int = 50) -> Table:
    """N = 1, 2 workers in ``memory`` mode, then each mode's cost on one worker."""
    if shutil.which("redis-server") is None and not Path("/usr/bin/redis-server").exists():
        table = Table("10. Workers on one Redis", ["note"])
        table.add("not run: no redis-server")
        return table
    runs = runs or (50 if quick else 300)
    table = Table(
        f"10. Workers on one Redis ({runs} concurrent runs per worker, {chunks} chunks, unpaced)",
        ["workers", "mode", "ok", "wall s", "chunks/s", "cpu ms/run", "x no memory"],
    )
    with tempfile.TemporaryDirectory(prefix="rxreact-redis-") as workdir:
        server, redis_url = _redis(workdir)
        try:
            base: float | None = None
            for n, mode in [(1, "none"), (1, "memory"), (1, "log"), (2, "memory")]:
                results = workers(url, redis_url, mode, n, runs, chunks)
                wall = max(r["wall_s"] for r in results)
                correct = sum(r["correct"] for r in results)
                cpu_per_run = sum(r["cpu_s"] for r in results) / (n * runs) * 1e3
                if mode == "none":
                    base = cpu_per_run
                ratio = f"{cpu_per_run / base:.2f}" if base else "n/a"
                table.add(
                    n,
                    mode,
                    f"{correct}/{n * runs}",
                    wall,
                    correct * chunks / wall,
                    cpu_per_run,
                    ratio,
                )
                for r in results:
                    if r["first_error"]:
                        table.notes.append(
                            f"{n} x {mode}: {r['errors']} errors: {r['first_error']}"
                        )
        finally:
            server.kill()
            server.wait(5)
    table.notes.append("chunks/s = correct runs x chunks / the slowest worker's wall time")
    return table


def child(argv: list[str]) -> None:
    url, redis_url, mode, runs, chunks = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    emit(_work(url, redis_url, mode, runs, chunks))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    child(sys.argv[2:])
