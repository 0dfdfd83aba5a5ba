"""What every adapter benchmark shares (:mod:`benchmarks.anthropic_adapter`,
:mod:`benchmarks.gemini_adapter`): the medians of round-robin child runs, the two tables
(CPU per chunk at N=2000, the fixed cost of a short conversation) against the async floor,
and the child's loop."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks._harness import Table, emit, medians, run_child
from benchmarks._stacks import Session

LONG = 2000
"""Chunks of the long answer (per-chunk cost); the short one has 10."""


def measure(
    module: str, stacks: Sequence[str], url: str, chunks: int, sessions: int, repeats: int
) -> dict[str, Any]:
    """Median over ``repeats`` round-robin child runs of each stack's per-session medians."""
    runs: dict[str, list[dict[str, Any]]] = {stack: [] for stack in stacks}
    for _ in range(repeats):
        for stack in stacks:
            runs[stack].append(run_child(module, [stack, url, str(chunks), str(sessions)]))
    keys = ("wall_s", "cpu_s", "ttft_s")
    return {s: {k: statistics.median(r[k] for r in rs) for k in keys} for s, rs in runs.items()}


def tables(
    name: str,
    labels: dict[str, str],
    module: str,
    stacks: Sequence[str],
    url: str,
    quick: bool,
) -> list[Table]:
    """The fixed-cost and per-chunk tables of one adapter (``httpx_async`` is the floor)."""
    sessions, repeats = (5, 1) if quick else (20, 3)
    fixed = measure(module, stacks, url, 10, sessions, repeats)
    long = measure(module, stacks, url, LONG, max(2, sessions // 4), repeats)
    per_chunk = Table(
        f"{name}: CPU per chunk (N={LONG}, {max(2, sessions // 4)} sessions x {repeats} repeats)",
        ["stack", "cpu us/chunk", "x async floor", "marginal us/chunk", "wall ms"],
    )
    floor = long["httpx_async"]["cpu_s"]
    for stack, r in long.items():
        marginal = (r["cpu_s"] - fixed[stack]["cpu_s"]) / (LONG - 10) * 1e6
        per_chunk.add(
            labels[stack],
            r["cpu_s"] / LONG * 1e6,
            f"{r['cpu_s'] / floor:.2f}",
            marginal,
            r["wall_s"] * 1e3,
        )
    short = Table(
        f"{name}: fixed cost (2 requests, 2 tools, N=10; {sessions} sessions x {repeats})",
        ["stack", "cpu ms", "x async floor", "wall ms", "ttft ms", "ttft - floor ms"],
    )
    base = fixed["httpx_async"]
    for stack, r in fixed.items():
        short.add(
            labels[stack],
            r["cpu_s"] * 1e3,
            f"{r['cpu_s'] / base['cpu_s']:.2f}",
            r["wall_s"] * 1e3,
            r["ttft_s"] * 1e3,
            f"{(r['ttft_s'] - base['ttft_s']) * 1e3:+.2f}",
        )
    for table in (per_chunk, short):
        table.notes.append(
            "process CPU time (all threads) per session; the mock is another process"
        )
    per_chunk.data, short.data = {"stacks": long}, {"stacks": fixed}
    return [short, per_chunk]


def child(
    argv: list[str], make_session: Callable[[str, str, int], tuple[Session, Callable[[], None]]]
) -> None:
    """One child run: a warm-up session, then ``sessions`` sessions; print their medians."""
    stack, url, chunks, sessions = argv[0], argv[1], int(argv[2]), int(argv[3])
    session, close = make_session(stack, url, chunks)
    try:
        session()  # warm-up
        runs = [session() for _ in range(sessions)]
    finally:
        close()
    emit({"stack": stack, "chunks": chunks, "sessions": sessions, **medians(runs)})
