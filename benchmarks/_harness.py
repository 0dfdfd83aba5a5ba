"""What every workload shares: the mock server process, child processes, the conversation,
statistics and memory readings.

Each stack is measured in a child process of its own (``python -m benchmarks.<workload>
--child ...``), one warm-up session first, like the peer harness: imports, thread pools and
connections are set up before the clock starts, and one stack's garbage or threads never
weigh on another's numbers. A child prints one JSON line; the parent builds the table.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

PROMPT = "What is the weather in Beijing and Shanghai?"
MODEL = "mock-model"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]
ROOT = Path(__file__).resolve().parent.parent
CHILD_TIMEOUT_S = 600.0
"""No child runs longer than this (bounded runs: a hung stack fails, it does not hang us)."""


class BenchError(RuntimeError):
    """A workload produced a wrong result (or none)."""


def expected_words(n: int) -> list[str]:
    """The mock's answer of ``n`` chunks, word by word."""
    return [f"w{i}" for i in range(n)]


def check_answer(text: str, n: int) -> None:
    """Fail loudly unless ``text`` is exactly the mock's ``n``-word answer."""
    words = text.split()
    if words != expected_words(n):
        raise BenchError(f"answer has {len(words)} words, expected w0 .. w{n - 1}")


def mock_headers(chunks: int, tool_calls: int = 2, delay_ms: float = 0) -> dict[str, str]:
    """Request headers that choose the mock's script (see ``_mock_server``)."""
    headers = {"X-Mock-Chunks": str(chunks), "X-Mock-Tool-Calls": str(tool_calls)}
    if delay_ms:
        headers["X-Mock-Delay-Ms"] = str(delay_ms)
    return headers


@contextlib.contextmanager
def mock_server(
    module: str = "benchmarks._mock_server", path: str = "/v1", env: dict[str, str] | None = None
) -> Iterator[str]:
    """Start a bench mock (``module``, by default the chat-completions one) in a child process
    on a free loopback port; yield its URL (``http://127.0.0.1:PORT`` + ``path``). ``env``:
    variables added to its environment (the ``_mock_server``'s ``MOCK_*`` defaults).

    The process is stopped by its pid when the block ends.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("PORT "):
            raise BenchError(f"{module} did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


def run_child(
    module: str,
    args: Sequence[str],
    timeout: float = CHILD_TIMEOUT_S,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Run ``python -m benchmarks.<module> --child ARGS``; return its last JSON line."""
    done = subprocess.run(
        [python, "-m", f"benchmarks.{module}", "--child", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise BenchError(
            f"{module} {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def emit(result: dict[str, Any]) -> None:
    """A child's answer to its parent: one JSON line on stdout."""
    print(json.dumps(result), flush=True)


def medians(runs: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Per-key medians of a list of numeric records (keys of the first record)."""
    return {
        key: statistics.median(run[key] for run in runs)
        for key, value in runs[0].items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def proc_status(field: str) -> int:
    """A number from ``/proc/self/status`` (``VmHWM`` and ``VmRSS`` in kB, ``Threads``)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise BenchError(f"no {field} in /proc/self/status")


def reset_peak_rss() -> None:
    """Reset ``VmHWM`` to the current RSS (Linux >= 4.0), so a later peak is this phase's."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


class ThreadSampler:
    """Samples the process's OS thread count every ``interval`` seconds; keeps the peak."""

    def __init__(self, interval: float = 0.05) -> None:
        self.peak = proc_status("Threads")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(interval,), daemon=True)

    def __enter__(self) -> ThreadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            self.peak = max(self.peak, proc_status("Threads"))


def timed(fn: Any, *args: Any) -> tuple[Any, float, float]:
    """``(result, wall_s, cpu_s)`` of ``fn(*args)``; cpu is process time, all threads."""
    t0, c0 = time.perf_counter(), time.process_time()
    result = fn(*args)
    return result, time.perf_counter() - t0, time.process_time() - c0


def env_int(name: str, default: int) -> int:
    """An integer setting from the environment."""
    return int(os.environ.get(name, default))


class Table:
    """One workload's result: a titled table plus notes, rendered as Markdown."""

    def __init__(self, title: str, columns: Sequence[str]) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows: list[list[str]] = []
        self.notes: list[str] = []
        self.data: dict[str, Any] = {}
        """Raw numbers, for ``--json``."""

    def add(self, *cells: object) -> None:
        self.rows.append([_cell(c) for c in cells])

    def render(self) -> str:
        widths = [
            max(len(str(row[i])) for row in [self.columns, *self.rows])
            for i in range(len(self.columns))
        ]
        lines = [f"## {self.title}", ""]
        for i, row in enumerate([self.columns, *self.rows]):
            lines.append(
                "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
            )
            if i == 0:
                lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        lines += ["", *(f"- {note}" for note in self.notes)]
        return "\n".join(lines).rstrip() + "\n"


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)
