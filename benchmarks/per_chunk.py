"""Workload 1: CPU per streamed chunk, rxreact's full agent loop against the httpx floors.

The bench conversation (user -> two parallel ``get_weather`` calls -> a 2,000-chunk,
one-word-per-chunk answer) through every stack of :mod:`benchmarks._stacks`, each in its own
process, round-robin ``repeats`` times; each process runs one warm-up then ``sessions``
sessions and reports medians; the table shows the median over repeats. ``x async floor`` is
the CPU ratio to ``httpx_async`` (the peer harness's ``raw_httpx``) measured in the same run.
``marginal`` subtracts the 10-chunk conversation's CPU (workload 2) when it was run.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks._harness import Table, run_child
from benchmarks._stacks import STACKS

LABELS = {
    "rxreact": "rxreact ReactAgent.stream (full loop)",
    "rxreact_loop": 'rxreact, io="loop" (shared asyncio reader)',
    "httpx_async": "httpx async, aiter_lines + json.loads (floor)",
    "httpx_sync_lines": "httpx sync, iter_lines + json.loads",
    "httpx_sync_read": "httpx sync, iter_raw only (read floor)",
}


def measure(
    url: str,
    chunks: int,
    sessions: int,
    repeats: int,
    *extra: str,
    stacks: tuple[str, ...] = STACKS,
) -> dict[str, Any]:
    """Median over ``repeats`` round-robin child runs of each stack's per-session medians."""
    runs: dict[str, list[dict[str, Any]]] = {stack: [] for stack in stacks}
    for _ in range(repeats):
        for stack in stacks:
            runs[stack].append(
                run_child("_sessions", [stack, url, str(chunks), str(sessions), *extra])
            )
    return {
        stack: {key: statistics.median(r[key] for r in rs) for key in ("wall_s", "cpu_s", "ttft_s")}
        for stack, rs in runs.items()
    }


def run(url: str, quick: bool, fixed: dict[str, Any] | None = None) -> Table:
    chunks, sessions, repeats = (2000, 5, 1) if quick else (2000, 20, 3)
    result = measure(url, chunks, sessions, repeats)
    floor = result["httpx_async"]["cpu_s"]
    table = Table(
        f"1. CPU per chunk (N={chunks}, {sessions} sessions x {repeats} repeats)",
        ["stack", "cpu us/chunk", "x async floor", "marginal us/chunk", "wall ms", "cpu ms"],
    )
    for stack in STACKS:
        r = result[stack]
        marginal = float("nan")
        if fixed and stack in fixed:
            marginal = (r["cpu_s"] - fixed[stack]["cpu_s"]) / (chunks - 10) * 1e6
        table.add(
            LABELS[stack],
            r["cpu_s"] / chunks * 1e6,
            f"{r['cpu_s'] / floor:.2f}",
            marginal,
            r["wall_s"] * 1e3,
            r["cpu_s"] * 1e3,
        )
    table.notes.append(
        "process CPU time (all threads) per session / N; the mock server is another process"
    )
    table.data = {"chunks": chunks, "sessions": sessions, "repeats": repeats, "stacks": result}
    return table
