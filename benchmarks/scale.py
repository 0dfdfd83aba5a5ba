"""Workload 4: many concurrent agent runs against a paced mock.

``runs`` conversations start at once; the mock paces every stream (one event per
``delay_ms``, ``chunks``-chunk answers) and records when it wrote each event. Every run must
complete with exactly ``w0 .. w{chunks-1}``. Reported per stack (each in its own process):
wall time, process CPU, peak OS threads, peak RSS (``VmHWM``) and its growth over the
warmed-up baseline, and the added per-chunk latency: subscriber receive time minus the
mock's send time, p50/p99 over every answer chunk of every run (both clocks are the
system-wide monotonic clock). Bounded: a run not finished by the deadline is a failure.

Stacks: ``rxreact_thread`` and ``rxreact_loop`` (one agent; the HTTP model in thread mode,
one OS thread per request attempt, or in loop mode, every stream on rxreact's one shared
asyncio loop), ``httpx_async`` (the peer harness's hand-written asyncio client, all runs as
tasks on one event loop: the floor) and, when the peers' venv has it (``PEERS_VENV``),
``openai_async`` (the openai SDK's ``AsyncOpenAI`` streaming, the same loop by hand, run with
that venv's Python), and the agent frameworks ``pydantic_ai``, ``openai_agents`` and
``langgraph`` the same way (``benchmarks/scale_peers.py``). Every stack has an HTTP client
with room for every connection (httpx's default pool holds 100).
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks._harness import (
    MODEL,
    PROMPT,
    TOOLS,
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

STACKS = (
    "rxreact_loop",
    "rxreact_thread",
    "httpx_async",
    "openai_async",
    "pydantic_ai",
    "openai_agents",
    "langgraph",
)
PEER_STACKS = {
    "openai_async": "openai",
    "pydantic_ai": "pydantic_ai",
    "openai_agents": "agents",
    "langgraph": "langgraph, langchain_openai",
}
"""The stacks run with the peers' venv Python, and the module each needs there."""
FRAMEWORKS = ("pydantic_ai", "openai_agents", "langgraph")
"""The agent frameworks' stacks (``benchmarks/scale_peers.py``): one that fails is a note."""


async def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"The weather in {city} is sunny, 25 C."


def _limits(runs: int, keepalive: int | None = None) -> httpx.Limits:
    """Room for every connection; ``keepalive``: how many may idle (default: all of them)."""
    return httpx.Limits(
        max_connections=runs + 8,
        max_keepalive_connections=runs + 8 if keepalive is None else keepalive,
    )


LOOP_KEEPALIVE = 20
"""rxreact_loop's keep-alive limit (httpx's default). httpcore's pool looks at every
connection for each idle one, on every request and response end: with hundreds of idle
connections that is quadratic. A client whose next request follows its last response at once
(the floor) has few idle connections; an agent's next round comes a tool run later, so at
1,000 runs most connections would idle between rounds. With more open connections than this
limit, httpcore closes a connection when it goes idle instead of keeping it."""


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
    url: str,
    runs: int,
    chunks: int,
    delay_ms: float,
    deadline_s: float,
    ramp_s: float = 0.0,
    io: str = "loop",
) -> dict[str, Any]:
    from rxreact import ReactAgent, tool
    from rxreact.events import TextDelta
    from rxreact.model.openai.client import OpenAIChatModel

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather for a city."""
        return f"The weather in {city} is sunny, 25 C."

    # The defaults a user gets: no hand-made client (the model sizes its own pools).
    model = OpenAIChatModel(MODEL, base_url=url, headers=mock_headers(chunks, 2, delay_ms), io=io)
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
        subscriptions = []
        for i in range(runs):
            if ramp_s:  # start run i at i/runs of the ramp (users arrive, not all at once)
                time.sleep(max(0.0, t0 + ramp_s * i / runs - time.perf_counter()))
            stream = agent.stream(f"{PROMPT} [run {i}]")
            subscriptions.append(stream.subscribe(*observer(str(i))))
        finished = all_done.wait(deadline_s)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    for subscription in subscriptions:
        subscription.dispose()
    model.close()
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


_React = Callable[[Any, str, Callable[..., Awaitable[str]]], AsyncIterator[str]]


def _httpx_async(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float, ramp_s: float = 0.0
) -> dict[str, Any]:
    from benchmarks._stacks import async_react

    def client() -> httpx.AsyncClient:
        headers = {"Authorization": "Bearer sk-x", **mock_headers(chunks, 2, delay_ms)}
        return httpx.AsyncClient(base_url=url, headers=headers, limits=_limits(runs), timeout=60)

    return _asyncio_runs(url, runs, deadline_s, chunks, client, async_react, ramp_s)


def _openai_async(
    url: str, runs: int, chunks: int, delay_ms: float, deadline_s: float, ramp_s: float = 0.0
) -> dict[str, Any]:
    from benchmarks._stacks import _assistant
    from benchmarks.scale_peers import openai_client

    def client() -> Any:
        return openai_client(url, runs, chunks, delay_ms)

    async def react(
        client: Any, prompt: str, get_weather: Callable[..., Awaitable[str]]
    ) -> AsyncIterator[str]:
        import json

        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        while True:
            found: dict[int, dict[str, str]] = {}
            stream = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=TOOLS, stream=True
            )
            async for chunk in stream:
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    yield delta.content
                for call in delta.tool_calls or ():
                    slot = found.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = call.id or slot["id"]
                    if call.function is not None:
                        slot["name"] += call.function.name or ""
                        slot["arguments"] += call.function.arguments or ""
            if not found:
                return
            calls = [found[i] for i in sorted(found)]
            messages.append(_assistant(calls))
            results = await asyncio.gather(
                *(get_weather(**json.loads(c["arguments"])) for c in calls)
            )
            messages += [
                {"role": "tool", "tool_call_id": c["id"], "content": r}
                for c, r in zip(calls, results, strict=True)
            ]

    return _asyncio_runs(url, runs, deadline_s, chunks, client, react, ramp_s)


def _asyncio_runs(
    url: str,
    runs: int,
    deadline_s: float,
    chunks: int,
    open_client: Callable[[], Any],
    react: _React,
    ramp_s: float = 0.0,
) -> dict[str, Any]:
    """Every run as a task on one event loop: ``react(client, prompt, tool)`` yields the text."""
    received: dict[str, list[float]] = {str(i): [] for i in range(runs)}
    texts: dict[str, list[str]] = {str(i): [] for i in range(runs)}
    errors: list[Exception] = []

    async def one(client: Any, run: str) -> None:
        stamps, parts = received[run], texts[run]
        try:
            async for text in react(client, f"{PROMPT} [run {run}]", get_weather):
                if text:
                    stamps.append(time.monotonic())
                    parts.append(text)
        except Exception as error:
            errors.append(error)

    async def main() -> tuple[bool, float, float, int, int, float]:
        async with open_client() as client:
            async for _ in react(client, PROMPT, get_weather):  # warm-up
                pass
            mock_cpu = _mock_cpu(url)
            base_rss = proc_status("VmRSS")
            reset_peak_rss()
            t0, c0 = time.perf_counter(), time.process_time()
            with ThreadSampler() as threads:
                tasks = []
                for i in range(runs):
                    if ramp_s:
                        await asyncio.sleep(max(0.0, t0 + ramp_s * i / runs - time.perf_counter()))
                    tasks.append(asyncio.create_task(one(client, str(i))))
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


def _describe(error: BaseException) -> str:
    """The error and what caused it (a timeout's kind shows in its cause)."""
    cause = error.__cause__
    return repr(error) + (f" from {cause!r}" if cause is not None else "")


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
        "first_error": _describe(errors[0]) if errors else None,
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
    """Every stack at a pace the floor can follow (50 events x 100 ms: 10,000 chunks/s offered
    at 1,000 runs), where latency is what a stack adds. (At 20 ms, the issue's first pace, no
    Python stack keeps up on 2 cores and latency is mostly queueing; ``--quick`` runs it.)"""
    runs = 100 if quick else 1000
    paces = [(50, 20)] if quick else [(50, 100)]
    deadline_s = 120.0
    table = Table(
        f"4. Scale ({runs} concurrent runs)",
        [
            "pace",
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
    results: dict[str, Any] = {}
    for chunks, delay_ms in paces:
        pace = f"{chunks} x {delay_ms} ms"
        for stack in STACKS:
            python = sys.executable
            if stack in PEER_STACKS:
                python = _peers_python(PEER_STACKS[stack])
                if python is None:
                    table.notes.append(
                        f"{pace} {stack}: not run (no peers' venv with {PEER_STACKS[stack]})"
                    )
                    continue
            args = [stack, url, str(runs), str(chunks), str(delay_ms), str(deadline_s)]
            try:
                r = run_child("scale", args, timeout=deadline_s + 120, python=python)
            except (BenchError, subprocess.TimeoutExpired) as error:
                if stack not in FRAMEWORKS:
                    raise
                last = str(error).strip().splitlines()[-1]
                table.notes.append(f"{pace} {stack}: failed ({last})")
                continue
            results[f"{stack}@{delay_ms}ms"] = r
            ok = f"{r['correct']}/{runs}" + ("" if r["finished"] else " (deadline)")
            table.add(
                pace,
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
                table.notes.append(
                    f"{pace} {stack}: {r['errors']} errors, first: {r['first_error']}"
                )
        ideal = (chunks + 4) * delay_ms / 1000
        table.notes.append(f"{pace}: the paced stream alone takes ~{ideal:.1f} s")
    table.notes.append("latency = subscriber receive - mock send, over every answer chunk")
    table.data = results
    return table


def measure(stack: str) -> Callable[..., dict[str, Any]]:
    """The measuring function of a stack: ``(url, runs, chunks, delay_ms, deadline_s,
    ramp_s=0)``; runs start together, or spread evenly over ``ramp_s`` seconds."""
    if stack.startswith("rxreact_"):
        io = stack.removeprefix("rxreact_")
        return lambda *args: _rxreact(*args, io=io)
    if stack in FRAMEWORKS:
        from benchmarks import scale_peers  # imports this module: only when asked for

        measured: Callable[..., dict[str, Any]] = getattr(scale_peers, stack)
        return measured
    return {"httpx_async": _httpx_async, "openai_async": _openai_async}[stack]


def _peers_python(module: str = "openai") -> str | None:
    """The peers' venv Python if it can import ``module``, else None."""
    venv = os.environ.get("PEERS_VENV", str(Path.home() / ".cache" / "rxreact-peers-venv"))
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        return None
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True, check=False)
    return str(python) if probe.returncode == 0 else None


def child(argv: list[str]) -> None:
    stack, url = argv[0], argv[1]
    runs, chunks, delay_ms, deadline_s = int(argv[2]), int(argv[3]), float(argv[4]), float(argv[5])
    ramp_s = float(argv[6]) if len(argv) > 6 else 0.0
    # Every run holds a connection: room for ten thousand of them (the hard limit allows).
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = measure(stack)(url, runs, chunks, delay_ms, deadline_s, ramp_s)
    emit({"stack": stack, **result})


if __name__ == "__main__":
    if sys.argv[1:2] != ["--child"]:
        sys.exit(__doc__)
    child(sys.argv[2:])
