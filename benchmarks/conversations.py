"""Workload 9: ten thousand concurrent conversations at a slow pace.

Each conversation is workload 4's (two tool calls, then an answer), paced at one event per
``delay_ms`` (default one per second, a 30-word answer: about 45 s a conversation, the tool
round included). The conversations start spread over ``ramp_s`` seconds (users arrive; ten
thousand TCP connects at one instant overflow the loopback server's accept queue for any
client), so with a ramp shorter than a conversation they all overlap. Reported per stack, as
in workload 4: correct runs, CPU, peak threads, peak RSS and the added latency beside the
asyncio floor's. Bounded: ``deadline_s`` per stack.
"""

from __future__ import annotations

import subprocess
from typing import Any

from benchmarks._harness import BenchError, Table, run_child

STACKS = ("rxreact_loop", "httpx_async")


def run(url: str, quick: bool) -> Table:
    """Every stack once; ``quick``: 500 conversations of 5 events at 100 ms."""
    if quick:
        return measure(url, runs=500, chunks=5, delay_ms=100.0, ramp_s=2.0, deadline_s=60.0)
    return measure(url, runs=10_000, chunks=30, delay_ms=1000.0, ramp_s=60.0, deadline_s=400.0)


def measure(
    url: str, *, runs: int, chunks: int, delay_ms: float, ramp_s: float, deadline_s: float
) -> Table:
    """The table for one configuration (each stack in a child process of its own)."""
    table = Table(
        f"9. Conversations ({runs} concurrent, {chunks} chunks x {delay_ms:.0f} ms, "
        f"started over {ramp_s:.0f} s)",
        [
            "stack",
            "ok",
            "wall s",
            "cpu s",
            "cpu us/chunk",
            "threads",
            "peak RSS MB",
            "latency p50 ms",
            "p99 ms",
        ],
    )
    results: dict[str, Any] = {}
    for stack in STACKS:
        args = [stack, url, str(runs), str(chunks), str(delay_ms), str(deadline_s), str(ramp_s)]
        try:
            r = run_child("scale", args, timeout=deadline_s + 120)
        except (BenchError, subprocess.TimeoutExpired) as error:
            # A stack that cannot even reach its own deadline check (a loop that far behind)
            # is a row of its own, not a lost table.
            table.add(stack, "did not finish", *["-"] * 7)
            table.notes.append(f"{stack}: {str(error).strip().splitlines()[-1]}")
            continue
        results[stack] = r
        ok = f"{r['correct']}/{runs}" + ("" if r["finished"] else " (deadline)")
        table.add(
            stack,
            ok,
            r["wall_s"],
            r["cpu_s"],
            r["cpu_us_per_chunk"],
            r["peak_threads"],
            r["peak_rss_mb"],
            r["latency_p50_ms"],
            r["latency_p99_ms"],
        )
        if r["first_error"]:
            table.notes.append(f"{stack}: {r['errors']} errors, first: {r['first_error']}")
    table.notes.append("latency = subscriber receive - mock send, over every answer chunk")
    table.data = results
    return table
