"""Workload 4: many concurrent agent runs against a paced mock.

``runs`` conversations start at once; the mock paces every stream (one event per
``delay_ms``, ``chunks``-chunk answers) and records when it wrote each event. Every run must
complete with exactly ``w0 .. w{chunks-1}``. Reported per stack (each in its own process):
wall time, process CPU, peak OS threads, peak RSS (``VmHWM``) and its growth over the
warmed-up baseline, and the added per-chunk latency: subscriber receive time minus the
mock's send time, p50/p99 over every answer chunk of every run (both clocks are the
system-wide monotonic clock). Bounded: a run not finished by the deadline is a failure.

Stacks: ``rxreact`` (one agent; the HTTP model's default I/O model is one OS thread per
request attempt) and ``httpx_async`` (the peer harness's hand-written asyncio client, all
runs as tasks on one event loop), both on an ``httpx`` client with room for every
connection (httpx's default pool holds 100).
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any

import httpx

from benchmarks._harness import (
    MODEL,
    PROMPT,
    BenchError,
    Table,
    ThreadSampler,
    check_answer,
    emit,
    mock_headers,
    percentile,
    proc_status,
    reset_peak_rss,
    run_child,
)

STACKS = ("rxreact", "httpx_async")


def _limits(runs: int) -> httpx.Limits:
    return httpx.Limits(max_connections=runs + 8, max_keepalive_connections=runs + 8)


def _mock_cpu(url: str) -> float:
    """The mock's CPU seconds so far (and it forgets the send times recorded so far)."""
    cpu: float = httpx.get(f"{url}/_sent", timeout=30).json()["cpu_s"]
    return cpu


def _latencies(url: str, received: dict[str, list[float]]) -> tuple[list[float], float]:
    """Receive minus send time of every answer chunk (event ``1 + j`` is word ``j``), and the
    mock's CPU seconds so far."""
    reply = httpx.get(f"{url}/_sent", timeout=30).json()
    sent = reply["sent"]
    out: list[float] = []
    for run, times in received.items():
        out += [r - s for r, s in zip(times, sent.get(run, [])[1:], strict=False)]
    return out, reply["cpu_s"]


def _rxreact(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float
) -> dict[str, Any]:
    from rxreact import ReactAgent, tool
    from rxreact.events import TextDelta
    from rxreact.model.openai import OpenAIChatModel

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    client = httpx.Client(limits=_limits(runs))
    model = OpenAIChatModel(
        MODEL,
        base_url=url,
        api_key="sk-x",
        headers=mock_headers(chunks, 2, delay_ms),
        http_client=client,
    )
    agent = ReactAgent(model, [get_weather])
    agent.call(PROMPT)  # warm-up: pools, imports, one connection
    mock_cpu = _mock_cpu(url)  # also forgets the warm-up's send times
    received: dict[str, list[float]] = {str(i): [] for i in range(runs)}
    texts: dict[str, list[str]] = {str(i): [] for i in range(runs)}
    errors: list[Exception] = []
    remaining = [runs]
    lock = threading.Lock()
    all_done = threading.Event()

    def observer(run: str) -> tuple[Any, Any, Any]:
        stamps, parts = received[run], texts[run]

        def on_next(event: Any) -> None:
            if type(event) is TextDelta and event.delta:
                stamps.append(time.monotonic())
                parts.append(event.delta)

        def finish() -> None:
            with lock:
                remaining[0] -= 1
                if remaining[0] == 0:
                    all_done.set()

        def on_error(error: Exception) -> None:
            errors.append(error)
            finish()

        return on_next, on_error, finish

    base_rss = proc_status("VmRSS")
    reset_peak_rss()
    t0, c0 = time.perf_counter(), time.process_time()
    with ThreadSampler() as threads:
        subscriptions = [
            agent.stream(f"{PROMPT} [run {i}]").subscribe(*observer(str(i))) for i in range(runs)
        ]
        finished = all_done.wait(deadline_s)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for subscription in subscriptions:
        subscription.dispose()
    model.close()
    client.close()
    return _summary(
        url,
        runs,
        chunks,
        texts,
        received,
        errors,
        finished,
        wall,
        cpu,
        threads.peak,
        base_rss,
        mock_cpu,
    )


def _httpx_async(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float
) -> dict[str, Any]:
    from benchmarks._stacks import async_react

    async def get_weather(city: str) -> str:
        return f"The weather in {city} is sunny, 25 C."

    received: dict[str, list[float]] = {str(i): [] for i in range(runs)}
    texts: dict[str, list[str]] = {str(i): [] for i in range(runs)}
    errors: list[Exception] = []

    async def one(client: httpx.AsyncClient, run: str) -> None:
        stamps, parts = received[run], texts[run]
        try:
            async for text in async_react(client, f"{PROMPT} [run {run}]", get_weather):
                if text:
                    stamps.append(time.monotonic())
                    parts.append(text)
        except Exception as error:
            errors.append(error)

    async def main() -> tuple[bool, float, float, int, int]:
        headers = {"Authorization": "Bearer sk-x", **mock_headers(chunks, 2, delay_ms)}
        async with httpx.AsyncClient(
            base_url=url, headers=headers, limits=_limits(runs), timeout=60
        ) as client:
            async for _ in async_react(client, PROMPT, get_weather):  # warm-up
                pass
            mock_cpu = (await client.get("/_sent")).json()["cpu_s"]
            base_rss = proc_status("VmRSS")
            reset_peak_rss()
            t0, c0 = time.perf_counter(), time.process_time()
            with ThreadSampler() as threads:
                tasks = [asyncio.create_task(one(client, str(i))) for i in range(runs)]
                _, pending = await asyncio.wait(tasks, timeout=deadline_s)
                for task in pending:
                    task.cancel()
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            return not pending, wall, cpu, threads.peak, base_rss, mock_cpu

    finished, wall, cpu, peak_threads, base_rss, mock_cpu = asyncio.run(main())
    return _summary(
        url,
        runs,
        chunks,
        texts,
        received,
        errors,
        finished,
        wall,
        cpu,
        peak_threads,
        base_rss,
        mock_cpu,
    )


def _summary(
    url: str,
    runs: int,
    chunks: int,
    texts: dict[str, list[str]],
    received: dict[str, list[float]],
    errors: list[Exception],
    finished: bool,
    wall: float,
    cpu: float,
    peak_threads: int,
    base_rss_kb: int,
    mock_cpu_start: float,
) -> dict[str, Any]:
    peak_kb = proc_status("VmHWM")  # before the checks below allocate their own
    correct = 0
    for parts in texts.values():
        try:
            check_answer("".join(parts), chunks)
            correct += 1
        except BenchError:
            pass
    latencies, mock_cpu_end = _latencies(url, received)
    return {
        "runs": runs,
        "correct": correct,
        "errors": len(errors),
        "first_error": repr(errors[0]) if errors else None,
        "finished": finished,
        "wall_s": wall,
        "cpu_s": cpu,
        "cpu_us_per_chunk": cpu / (runs * chunks) * 1e6,
        "mock_cpu_s": mock_cpu_end - mock_cpu_start,
        "peak_threads": peak_threads,
        "peak_rss_mb": peak_kb / 1024,
        "rss_growth_mb": (peak_kb - base_rss_kb) / 1024,
        "latency_p50_ms": percentile(latencies, 0.5) * 1e3,
        "latency_p99_ms": percentile(latencies, 0.99) * 1e3,
        "latency_max_ms": max(latencies, default=float("nan")) * 1e3,
    }


def run(url: str, quick: bool) -> Table:
    runs, chunks, delay_ms = (100, 50, 20) if quick else (1000, 200, 20)
    deadline_s = 120.0
    table = Table(
        f"4. Scale ({runs} concurrent runs, {chunks} chunks {delay_ms} ms apart)",
        [
            "stack",
            "ok",
            "wall s",
            "cpu s",
            "cpu us/chunk",
            "mock cpu s",
            "threads",
            "peak RSS MB",
            "RSS growth MB",
            "latency p50 ms",
            "p99 ms",
            "max ms",
        ],
    )
    results = {}
    for stack in STACKS:
        args = [stack, url, str(runs), str(chunks), str(delay_ms), str(deadline_s)]
        r = run_child("scale", args, timeout=deadline_s + 120)
        results[stack] = r
        ok = f"{r['correct']}/{runs}" + ("" if r["finished"] else " (deadline)")
        table.add(
            stack,
            ok,
            r["wall_s"],
            r["cpu_s"],
            r["cpu_us_per_chunk"],
            r["mock_cpu_s"],
            r["peak_threads"],
            r["peak_rss_mb"],
            r["rss_growth_mb"],
            r["latency_p50_ms"],
            r["latency_p99_ms"],
            r["latency_max_ms"],
        )
        if r["first_error"]:
            table.notes.append(f"{stack}: {r['errors']} errors, first: {r['first_error']}")
    ideal = (chunks + 4) * delay_ms / 1000
    table.notes.append(
        f"the paced stream alone takes ~{ideal:.1f} s; latency = subscriber receive - mock send"
    )
    table.data = results
    return table


def child(argv: list[str]) -> None:
    stack, url = argv[0], argv[1]
    runs, chunks, delay_ms, deadline_s = int(argv[2]), int(argv[3]), float(argv[4]), float(argv[5])
    measure = _rxreact if stack == "rxreact" else _httpx_async
    emit({"stack": stack, **measure(url, runs, chunks, delay_ms, deadline_s)})


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    child(sys.argv[2:])
