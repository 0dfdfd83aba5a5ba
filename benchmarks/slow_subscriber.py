"""Workload 5: a slow subscriber does not make memory grow without bound.

The mock writes a ``chunks``-chunk answer at once (tens of MB on the wire); the subscriber
sleeps 1 ms every ``every`` text deltas, far slower than the HTTP reader. Between them,
``deliver_on``'s buffer (``ReactAgent(buffer_size=1024)``) holds the reader back once full,
and then TCP flow control holds the server back. The peak RSS over the warmed-up baseline is
compared with ``buffer_size=None`` (unbounded: the reader runs ahead and the whole answer
waits in memory). The answer is checked word by word in both cases.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

from benchmarks._harness import (
    MODEL,
    PROMPT,
    BenchError,
    Table,
    check_answer,
    emit,
    mock_headers,
    proc_status,
    reset_peak_rss,
    run_child,
)


def child(argv: list[str]) -> None:
    from rxreact import ReactAgent, tool
    from rxreact.events import TextDelta
    from rxreact.model.openai.client import OpenAIChatModel

    url, chunks, every = argv[0], int(argv[1]), int(argv[2])
    buffer_size = None if argv[3] == "none" else int(argv[3])

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    def model(n: int) -> OpenAIChatModel:
        return OpenAIChatModel(MODEL, base_url=url, api_key="sk-x", headers=mock_headers(n))

    with model(10) as warm_up:
        ReactAgent(warm_up, [get_weather]).call(PROMPT)
    measured = model(chunks)
    agent = ReactAgent(measured, [get_weather], buffer_size=buffer_size)
    parts: list[str] = []
    failure: list[Exception] = []
    done = threading.Event()

    def on_next(event: Any) -> None:
        if type(event) is TextDelta and event.delta:
            parts.append(event.delta)
            if len(parts) % every == 0:
                time.sleep(0.001)

    def on_error(error: Exception) -> None:
        failure.append(error)
        done.set()

    base = proc_status("VmRSS")
    reset_peak_rss()
    t0 = time.perf_counter()
    subscription = agent.stream(PROMPT).subscribe(on_next, on_error, done.set)
    finished = done.wait(300)
    wall = time.perf_counter() - t0
    peak = proc_status("VmHWM")  # before checking: the check builds 100,000 strings itself
    subscription.dispose()
    measured.close()
    if not finished or failure:
        raise BenchError(f"slow subscriber run failed: {failure or 'deadline'}")
    check_answer("".join(parts), chunks)
    emit(
        {
            "buffer_size": buffer_size,
            "wall_s": wall,
            "base_rss_mb": base / 1024,
            "peak_rss_mb": peak / 1024,
            "growth_mb": (peak - base) / 1024,
        }
    )


def run(url: str, quick: bool) -> Table:
    chunks, every = (20_000, 20) if quick else (100_000, 20)
    table = Table(
        f"5. Slow subscriber ({chunks:,} chunks, 1 ms sleep every {every} deltas)",
        ["buffer_size", "wall s", "baseline RSS MB", "peak RSS MB", "growth MB"],
    )
    results = []
    for size in ("1024", "none"):
        r = run_child("slow_subscriber", [url, str(chunks), str(every), size])
        results.append(r)
        label = "1024 (default)" if size == "1024" else "None (unbounded)"
        table.add(label, r["wall_s"], r["base_rss_mb"], r["peak_rss_mb"], r["growth_mb"])
    table.notes.append(
        f"the answer is ~{chunks * 235 / 1e6:.0f} MB of SSE; bounded, the reader waits for room"
    )
    table.notes.append(
        "what remains of the growth when bounded is the answer itself: the agent keeps the "
        "round's text for final_answer and the history (~90 B per chunk)"
    )
    table.data = {"chunks": chunks, "rows": results}
    return table


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    child(sys.argv[2:])
