"""Workload 12: what a live streaming run keeps for the garbage collector to walk.

At thousands of concurrent conversations a full collection walks every tracked object of
every live run, and that walk is the p99 latency (a pass of 1.4-1.9 s at 10,000). This counts
them, without timing anything (so a busy machine does not change the answer):
``runs`` agent runs stream a paced answer from the mock (one chunk per ``delay_ms``); once
every run has received its first text delta, a full collection runs and the tracked objects
(``gc.get_objects()``) are counted against the count before the runs started. Reported: tracked
objects per live run, the types that account for most of them, and the duration of that
collection.

Run: ``python -m benchmarks.gc_objects [--runs N]`` (or ``python -m benchmarks --only
gc``).
"""

from __future__ import annotations

import argparse
import collections
import gc
import sys
import threading
import time
from typing import Any

from benchmarks._harness import MODEL, PROMPT, Table, emit, mock_headers, mock_server, run_child


def _count(runs: int, chunks: int, delay_ms: float, url: str, io: str) -> dict[str, Any]:
    from rxreact import OpenAIChatModel, ReactAgent, TextDelta

    headers = mock_headers(chunks, tool_calls=1, delay_ms=delay_ms)

    async def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    model = OpenAIChatModel(MODEL, base_url=url, headers=headers, io=io)  # type: ignore[arg-type]
    agent = ReactAgent(model, [get_weather])
    started = threading.Semaphore(0)
    finished = threading.Semaphore(0)

    def on_next(event: Any, seen: list[bool]) -> None:
        if isinstance(event, TextDelta) and not seen:
            seen.append(True)
            started.release()

    # Warm up: imports, the loop, the pools, one connection.
    agent.run(PROMPT)
    gc.collect()
    before = collections.Counter(type(o).__name__ for o in gc.get_objects())
    subscriptions = []
    for i in range(runs):
        seen: list[bool] = []
        subscriptions.append(
            agent.stream(f"{PROMPT} [run {i}]").subscribe(
                on_next=lambda e, seen=seen: on_next(e, seen),
                on_error=lambda _: finished.release(),
                on_completed=finished.release,
            )
        )
    for _ in range(runs):
        if not started.acquire(timeout=120):
            raise RuntimeError("a run did not start streaming within 120 s")
    t0 = time.perf_counter()
    gc.collect()
    pause = time.perf_counter() - t0
    during = collections.Counter(type(o).__name__ for o in gc.get_objects())
    for _ in range(runs):
        finished.acquire(timeout=300)
    growth = during - before
    total = sum(growth.values())
    return {
        "per_run": total / runs,
        "pause_ms": pause * 1e3,
        "tracked": sum(during.values()),
        "top": growth.most_common(12),
    }


def run(url: str, quick: bool, runs: int | None = None) -> Table:
    runs = runs or (100 if quick else 1000)
    table = Table(
        f"12. Tracked objects per live run ({runs} paced streaming runs, after a tool round)",
        ["I/O mode", "objects/run", "full collection ms", "tracked in all"],
    )
    for io in ("loop", "thread"):
        result = run_child("gc_objects", [url, str(runs), io])
        table.add(io, result["per_run"], result["pause_ms"], result["tracked"])
        top = ", ".join(f"{name} {count / runs:.1f}" for name, count in result["top"])
        table.notes.append(f"{io}: per run, by type: {top}")
    return table


def child(argv: list[str]) -> None:
    url, runs, io = argv[0], int(argv[1]), argv[2]
    emit(_count(runs, chunks=200, delay_ms=50, url=url, io=io))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gc_objects")
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    with mock_server() as url:
        print(run(url, False, args.runs).render())


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        main()
