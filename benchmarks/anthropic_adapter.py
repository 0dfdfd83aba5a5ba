"""The Anthropic adapter: CPU per streamed chunk and the fixed cost of a short conversation.

The bench conversation (user -> two parallel ``get_weather`` calls -> an answer of N one-word
chunks) in Anthropic's Messages events (:mod:`benchmarks._anthropic_mock`), through:

- ``rxreact``: :class:`~rxreact.ReactAgent` over :class:`~rxreact.AnthropicModel`
  (``io="thread"``), the full agent loop, every event to the subscriber;
- ``rxreact_loop``: the same with ``io="loop"``;
- ``httpx_async``: the floor, a hand-written reader of the same wire format on
  ``httpx.AsyncClient`` (``aiter_lines`` + ``json.loads`` per event, tool calls assembled by
  block index, tools with ``asyncio.gather``);
- ``anthropic_sdk``: the vendor SDK's own streaming helper, ``AsyncAnthropic().messages.stream``
  (text events, then ``get_final_message()`` for the tool calls), when it is installed
  (the ``bench`` extra).

Each stack runs in a child process of its own (a warm-up, then ``sessions`` sessions, medians),
as in :mod:`benchmarks.per_chunk`. Targets: per chunk at most 0.7x the floor, fixed cost at
most 1.25x, first token within 2 ms of it.

``python -m benchmarks.anthropic_adapter [--quick]``
"""

from __future__ import annotations

import contextlib
import importlib.util
import statistics
import sys
from typing import Any

from benchmarks._anthropic_stacks import make_session
from benchmarks._harness import Table, emit, medians, mock_server, run_child

STACKS = ("rxreact", "rxreact_loop", "httpx_async", "anthropic_sdk")
LABELS = {
    "rxreact": 'rxreact AnthropicModel, io="thread" (full loop)',
    "rxreact_loop": 'rxreact AnthropicModel, io="loop" (full loop)',
    "httpx_async": "httpx async, aiter_lines + json.loads (floor)",
    "anthropic_sdk": "anthropic SDK AsyncAnthropic.messages.stream",
}


def available() -> tuple[str, ...]:
    """The stacks that can run here (the SDK is an optional bench dependency)."""
    sdk = importlib.util.find_spec("anthropic") is not None
    return tuple(s for s in STACKS if s != "anthropic_sdk" or sdk)


def anthropic_mock() -> contextlib.AbstractContextManager[str]:
    """Start :mod:`benchmarks._anthropic_mock` in a child process; yield its base URL."""
    return mock_server("benchmarks._anthropic_mock", path="")


# -- the workload ---------------------------------------------------------------------------


def measure(url: str, chunks: int, sessions: int, repeats: int) -> dict[str, Any]:
    """Median over ``repeats`` round-robin child runs of each stack's per-session medians."""
    stacks = available()
    runs: dict[str, list[dict[str, Any]]] = {stack: [] for stack in stacks}
    for _ in range(repeats):
        for stack in stacks:
            args = [stack, url, str(chunks), str(sessions)]
            runs[stack].append(run_child("anthropic_adapter", args))
    keys = ("wall_s", "cpu_s", "ttft_s")
    return {s: {k: statistics.median(r[k] for r in rs) for k in keys} for s, rs in runs.items()}


def run(quick: bool) -> list[Table]:
    sessions, repeats = (5, 1) if quick else (20, 3)
    with anthropic_mock() as url:
        fixed = measure(url, 10, sessions, repeats)
        long = measure(url, 2000, max(2, sessions // 4), repeats)
    per_chunk = Table(
        f"Anthropic: CPU per chunk (N=2000, {max(2, sessions // 4)} sessions x {repeats} repeats)",
        ["stack", "cpu us/chunk", "x async floor", "marginal us/chunk", "wall ms"],
    )
    floor = long["httpx_async"]["cpu_s"]
    for stack, r in long.items():
        marginal = (r["cpu_s"] - fixed[stack]["cpu_s"]) / (2000 - 10) * 1e6
        per_chunk.add(
            LABELS[stack],
            r["cpu_s"] / 2000 * 1e6,
            f"{r['cpu_s'] / floor:.2f}",
            marginal,
            r["wall_s"] * 1e3,
        )
    short = Table(
        f"Anthropic: fixed cost (2 requests, 2 tools, N=10; {sessions} sessions x {repeats})",
        ["stack", "cpu ms", "x async floor", "wall ms", "ttft ms", "ttft - floor ms"],
    )
    base = fixed["httpx_async"]
    for stack, r in fixed.items():
        short.add(
            LABELS[stack],
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


def child(argv: list[str]) -> None:
    stack, url, chunks, sessions = argv[0], argv[1], int(argv[2]), int(argv[3])
    session, close = make_session(stack, url, chunks)
    try:
        session()  # warm-up
        runs = [session() for _ in range(sessions)]
    finally:
        close()
    emit({"stack": stack, "chunks": chunks, "sessions": sessions, **medians(runs)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2:])
    else:
        for table in run("--quick" in sys.argv[1:]):
            print(table.render(), flush=True)
