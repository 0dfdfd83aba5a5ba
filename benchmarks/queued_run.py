"""Workload 8: what one run per conversation costs, against the plain cold stream.

Per memory backend (in-process, a SQLite file, a real ``redis-server`` when one is on PATH),
against the loopback mock, workload 2's conversation (two requests, two ``get_weather``
calls, a 10-chunk answer, checked word by word), medians of ``repeats`` runs:

- ``cold``: ``agent.stream(q)`` without a conversation, the reference: start (subscribe to the
  first event) and whole run;
- ``uncontended``: the same on a conversation nobody else holds: lease, history, fenced
  commit, release;
- ``queued, same process``: a run subscribed while another holds the conversation; hand-off =
  the holder's completion to the queued run's first event (the holder's release wakes it);
- ``queued, other process``: the lease is released through another memory object, as another
  process would release it (no in-process wake-up: SQLite's waiter finds it by its poll,
  10 ms doubling to 200 ms; Redis's hears the release's pub/sub notice); hand-off = that
  release to the first event, the release falling at a spread of moments in the poll cycle.

Also the marginal CPU per chunk, cold and on a conversation: (CPU of a 1,000-chunk answer -
CPU of a 10-chunk one) / 990, the fixed costs (lease, history, commit) taken out. Holding a
lease adds one observer layer to a conversation run's events; a plain ``stream()`` has none.

``python -m benchmarks.queued_run [--quick]`` prints the table.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks._harness import (
    MODEL,
    PROMPT,
    BenchError,
    Table,
    check_answer,
    mock_headers,
    mock_server,
)

CHUNKS = 10
LONG = 1000  # chunks of the answer whose CPU per chunk is compared
TIMEOUT_S = 60.0


class Timed:
    """One subscription's moments (subscribed, first event, completed) and its answer."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks
        self.text: list[str] = []
        self.subscribed = time.perf_counter()
        self.first: float | None = None
        self.completed: float | None = None
        self.error: Exception | None = None
        self.done = threading.Event()

    def on_next(self, event: Any) -> None:
        if self.first is None:
            self.first = time.perf_counter()
        if event.type == "text_delta":
            self.text.append(event.delta)

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.done.set()

    def on_completed(self) -> None:
        self.completed = time.perf_counter()
        self.done.set()

    def wait(self) -> Timed:
        if not self.done.wait(TIMEOUT_S):
            raise BenchError("a run did not finish")
        if self.error is not None:
            raise BenchError(f"a run failed: {self.error!r}")
        check_answer("".join(self.text), self.chunks)
        return self


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def subscribe(agent: Any, conversation_id: str | None, chunks: int = CHUNKS) -> Timed:
    timed = Timed(chunks)
    agent.stream(PROMPT, conversation_id).subscribe(
        timed.on_next, timed.on_error, timed.on_completed
    )
    return timed


@contextmanager
def redis_url() -> Iterator[str | None]:
    """A throwaway ``redis-server`` on a free loopback port, or None without one."""
    executable = shutil.which("redis-server")
    if executable is None:
        yield None
        return
    import redis

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [executable, "--port", str(port), "--bind", "127.0.0.1", "--save", ""],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url)
        for _ in range(500):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.01)  # a benchmark harness waiting for its server to listen
        client.close()
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def backends(workdir: Path, redis: str | None) -> list[tuple[str, Callable[[], Any]]]:
    from rxreact import InMemoryChatMemory, RedisChatMemory, SQLiteChatMemory

    made = [
        ("in-process", InMemoryChatMemory),
        ("SQLite", lambda: SQLiteChatMemory(workdir / "bench.db")),
    ]
    if redis is not None:
        made.append(("Redis", lambda: RedisChatMemory(redis, prefix="bench:")))
    return made


def measure(url: str, make_memory: Callable[[], Any], repeats: int, shared: bool) -> dict[str, Any]:
    """The medians for one backend; ``shared``: two memory objects see one store (not
    in-process memory), so the other-process case is measured."""
    from rxreact import ReactAgent
    from rxreact.model.openai.client import OpenAIChatModel

    def make_agent(chunks: int) -> tuple[Any, Any]:
        model = OpenAIChatModel(MODEL, base_url=url, api_key="sk-x", headers=mock_headers(chunks))
        return ReactAgent(model, [get_weather], memory=memory), model

    memory, other = make_memory(), make_memory()
    agent, model = make_agent(CHUNKS)
    cold, uncontended, same, other_process = [], [], [], []
    for i in range(repeats):
        cold.append(subscribe(agent, None).wait())
        uncontended.append(subscribe(agent, f"alone-{i}").wait())
        pair = sorted(  # either may take the lease first: order them by when they finished
            (subscribe(agent, f"pair-{i}"), subscribe(agent, f"pair-{i}")),
            key=lambda run: run.wait().completed or 0.0,
        )
        same.append(pair[1].first - pair[0].completed)  # type: ignore[operator]
        if not shared:
            continue
        lease = other.try_acquire(f"elsewhere-{i}", "another process", 30)
        waiter = subscribe(agent, f"elsewhere-{i}")
        threading.Event().wait(0.3 * i / repeats)  # spread the release over the poll cycle
        released = time.perf_counter()
        other.release(lease)
        other_process.append(waiter.wait().first - released)  # type: ignore[operator]
    long_agent, long_model = make_agent(LONG)
    per_chunk: dict[str, list[float]] = {"cold": [], "conversation": []}

    def cpu(chosen: Any, conversation: str | None, chunks: int) -> float:
        c0 = time.process_time()
        subscribe(chosen, conversation, chunks).wait()
        return time.process_time() - c0

    for i in range(max(3, repeats // 3)):
        for case, conversation in (("cold", None), ("conversation", f"long-{i}")):
            long_cpu = cpu(long_agent, conversation, LONG)
            short_cpu = cpu(agent, None if conversation is None else f"short-{i}", CHUNKS)
            per_chunk[case].append((long_cpu - short_cpu) / (LONG - CHUNKS))
    long_model.close()
    model.close()
    for m in (memory, other):
        if hasattr(m, "close"):
            m.close()

    def starts(runs: list[Timed]) -> float:
        return statistics.median(r.first - r.subscribed for r in runs)  # type: ignore[operator]

    def walls(runs: list[Timed]) -> float:
        return statistics.median(r.completed - r.subscribed for r in runs)  # type: ignore[operator]

    return {
        "cold_start_s": starts(cold),
        "cold_wall_s": walls(cold),
        "uncontended_start_s": starts(uncontended),
        "uncontended_wall_s": walls(uncontended),
        "handoff_same_s": statistics.median(same),
        "handoff_other_s": statistics.median(other_process) if shared else None,
        "handoff_other_max_s": max(other_process) if shared else None,
        "cpu_per_chunk_cold_s": statistics.median(per_chunk["cold"]),
        "cpu_per_chunk_conversation_s": statistics.median(per_chunk["conversation"]),
    }


def run(url: str, quick: bool) -> Table:
    repeats = 8 if quick else 30
    table = Table(
        f"8. One run per conversation (2 requests, 2 tools, N={CHUNKS}; medians of {repeats})",
        ["memory", "case", "start ms", "x cold start", "run ms", "x cold run"],
    )
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as workdir, redis_url() as redis:
        for name, make in backends(Path(workdir), redis):
            r = results[name] = measure(url, make, repeats, shared=name != "in-process")
            cold_start, cold_wall = r["cold_start_s"], r["cold_wall_s"]
            for case, start, wall in (
                ("cold stream (reference)", cold_start, cold_wall),
                ("uncontended conversation", r["uncontended_start_s"], r["uncontended_wall_s"]),
                ("queued, same process: hand-off", r["handoff_same_s"], None),
                ("queued, other process: hand-off", r["handoff_other_s"], None),
            ):
                if start is None:
                    continue
                table.add(
                    name,
                    case,
                    start * 1e3,
                    f"{start / cold_start:.2f}",
                    "" if wall is None else wall * 1e3,
                    "" if wall is None else f"{wall / cold_wall:.2f}",
                )
    table.notes.append(
        "start: subscribe to the first event; hand-off: the holder's release to the queued "
        "run's first event (a queued run's start column)"
    )
    table.notes.append(
        "marginal CPU per chunk, cold / on a conversation: "
        + ", ".join(
            f"{n} {r['cpu_per_chunk_cold_s'] * 1e6:.1f} / "
            f"{r['cpu_per_chunk_conversation_s'] * 1e6:.1f} µs "
            f"({r['cpu_per_chunk_conversation_s'] / r['cpu_per_chunk_cold_s']:.2f}x)"
            for n, r in results.items()
        )
    )
    table.notes.append(
        "other process: max hand-off "
        + ", ".join(
            f"{n} {r['handoff_other_max_s'] * 1e3:.0f} ms"
            for n, r in results.items()
            if r["handoff_other_max_s"] is not None
        )
        + " (SQLite: found by the poll, 200 ms apart at most; Redis: woken by the pub/sub notice,"
        " or by the poll when the notice came before the subscription)"
    )
    table.data = results
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    with mock_server() as url:
        print(run(url, args.quick).render())


if __name__ == "__main__":
    main()
