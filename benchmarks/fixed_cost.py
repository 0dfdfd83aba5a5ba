"""Workload 2: the fixed cost of a short conversation and the time to the first answer token.

Two requests, two tool calls, a 10-chunk answer, per stack (as workload 1). Targets: CPU at
most 1.5x the async floor's, time to first token within 2 ms of it.
"""

from __future__ import annotations

from typing import Any

from benchmarks._harness import Table
from benchmarks.per_chunk import LABELS, measure

CHUNKS = 10


def run(url: str, quick: bool) -> Table:
    sessions, repeats = (5, 1) if quick else (20, 3)
    result = measure(url, CHUNKS, sessions, repeats)
    floor = result["httpx_async"]
    table = Table(
        f"2. Fixed cost (2 requests, 2 tools, N={CHUNKS}; {sessions} sessions x {repeats} repeats)",
        ["stack", "cpu ms", "x async floor", "wall ms", "ttft ms", "ttft - floor ms"],
    )
    for stack, r in result.items():
        no_answer = stack == "httpx_sync_read"
        table.add(
            LABELS[stack],
            r["cpu_s"] * 1e3,
            f"{r['cpu_s'] / floor['cpu_s']:.2f}",
            r["wall_s"] * 1e3,
            r["ttft_s"] * 1e3,
            f"{(r['ttft_s'] - floor['ttft_s']) * 1e3:+.2f}"
            + (" (first byte)" if no_answer else ""),
        )
    table.notes.append("ttft: session start to the first non-empty answer delta")
    table.data = {"chunks": CHUNKS, "sessions": sessions, "repeats": repeats, "stacks": result}
    return table


def as_fixed(table: Table) -> dict[str, Any]:
    """Per-stack medians, for workload 1's marginal column."""
    stacks: dict[str, Any] = table.data["stacks"]
    return stacks
