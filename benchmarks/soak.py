"""``make soak`` / ``python -m benchmarks.soak``: many agent runs against a faulty loopback server.

Every run is a real ``ReactAgent`` run (a tool round, then the answer) over real sockets, in
both I/O modes (alternating), against ``tests/fault_server.py``. A share of the requests
(``--fault-rate``) meets a fault: trickling headers, stalls, resets, garbage, a huge line,
429/503, a long stream cut without a finish, a body without ``[DONE]``; a share of the tool
calls raise ``SystemExit`` or outlive their timeout; a share of the runs (``--dispose-rate``)
is disposed after a random delay. Every run must end (answer or typed error) within
``--bound`` seconds of its start, or be disposed: a run that does neither is **stuck**.

Reported: outcomes by kind, stuck runs (must be 0), and threads, file descriptors and RSS
after a warm-up and after the soak (once the server is idle). Exit status 1 if any run was
stuck or any error was not an ``RxReactError``.
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fault_server import Fault, FaultServer, ok

from rxreact import CancellationToken, InMemoryChatMemory, OpenAIChatModel, ReactAgent, tool
from rxreact.errors import RxReactError
from rxreact.model.retry_policy import Backoff

FAULTS = [
    Fault("trickle_headers", interval=0.1),
    Fault("stall"),
    Fault("stall_body"),
    Fault("reset"),
    Fault("reset_mid"),
    Fault("garbage"),
    Fault("huge_line", size=1 << 20),
    Fault("status", status=429, retry_after="0"),
    Fault("status", status=503),
    Fault("endless", interval=0.005, size=200),
    Fault("no_finish"),
]
CITIES = ["Oslo"] * 18 + ["Exit", "Slow"]


@tool(timeout=1.0)
def get_weather(city: str, token: CancellationToken) -> str:
    """Current weather for a city."""
    if city == "Exit":
        raise SystemExit(2)
    if city == "Slow":
        token.wait(3.0)  # outlives the tool timeout
    return f"{city}: sunny"


def resources(models: list[OpenAIChatModel]) -> dict[str, float]:
    """Threads, open file descriptors and resident memory (MiB) of this process, and the
    connections the models' httpx pools hold (each also holds a server thread and two fds)."""
    rss_kib = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss_kib = int(line.split()[1])
    return {
        "threads": threading.active_count(),
        "fds": len(os.listdir("/proc/self/fd")),
        "rss_mib": round(rss_kib / 1024, 1),
        "pooled": sum(_pooled(model) for model in models),
    }


def _pooled(model: OpenAIChatModel) -> int:
    client: Any = model._endpoint.clients.user_client
    try:
        return len(client._transport._pool.connections)
    except AttributeError:
        return 0


class Soak:
    """One soak: the server, two models (thread and loop mode), the tally."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.random = random.Random(args.seed)
        self.lock = threading.Lock()
        self.outcomes: collections.Counter[str] = collections.Counter()
        self.stuck: list[str] = []
        self.foreign: list[str] = []
        self.series: list[tuple[int, dict[str, float]]] = []  # (runs done, resources)

    def script(self, number: int, body: bytes) -> Fault:
        with self.lock:
            roll, fault, city = self.random.random(), self.random.choice(FAULTS), None
            city = self.random.choice(CITIES)
        if roll < self.args.fault_rate:
            return fault
        if b'"role":"tool"' in body:
            return ok("It is sunny.")
        return Fault("tool_call", text=city)

    def run_one(self, agent: ReactAgent, number: int) -> None:
        with self.lock:
            dispose_after = (
                self.random.uniform(0, 0.5)
                if self.random.random() < self.args.dispose_rate
                else None
            )
        done = threading.Event()
        box: dict[str, Any] = {}

        def on_error(error: Exception) -> None:
            box["error"] = error
            done.set()

        # A bounded set of conversations (and turns per conversation): memory that grows
        # over the soak is then a leak, not 10,000 stored conversations.
        conversation = f"c{number % 64}"
        subscription = agent.stream("weather?", conversation_id=conversation).subscribe(
            on_next=lambda _: None, on_error=on_error, on_completed=done.set
        )
        if dispose_after is not None and not done.wait(dispose_after):
            subscription.dispose()
            self.tally("disposed")
            return
        if not done.wait(self.args.bound):
            subscription.dispose()
            with self.lock:
                self.stuck.append(f"run {number} ({agent.model.io})")  # type: ignore[attr-defined]
            self.tally("stuck")
            return
        error = box.get("error")
        if error is None:
            self.tally("answered")
        else:
            if not isinstance(error, RxReactError):
                with self.lock:
                    self.foreign.append(repr(error))
            self.tally(type(error).__name__)

    def tally(self, kind: str) -> None:
        with self.lock:
            self.outcomes[kind] += 1

    def main(self) -> int:
        args = self.args
        options: dict[str, Any] = {
            "first_chunk_timeout": 1.0,
            "chunk_timeout": 1.0,
            "connect_timeout": 2.0,
            "max_retries": 1,
            "backoff": Backoff(base=0.01, cap=0.1),
            "max_line_bytes": 256 << 10,
        }
        with FaultServer(self.script) as server:
            models = [
                OpenAIChatModel("soak", base_url=server.base_url, io="thread", **options),
                OpenAIChatModel("soak", base_url=server.base_url, io="loop", **options),
            ]
            agents = [
                ReactAgent(
                    m,
                    [get_weather],
                    memory=InMemoryChatMemory(max_turns=4),
                    tool_timeout=2.0,
                    stall_timeout=45.0,  # above the default busy_timeout (30 s), below the bound
                )
                for m in models
            ]
            with ThreadPoolExecutor(args.concurrency, thread_name_prefix="soak") as pool:
                warm = min(200, args.runs // 10)
                list(pool.map(lambda n: self.run_one(agents[n % 2], n), range(warm)))
                self.outcomes.clear()
                gc.collect()
                before = resources(models)
                started = time.perf_counter()
                step = max(1, args.runs // 10)
                for first in range(0, args.runs, step):
                    numbers = range(first, min(args.runs, first + step))
                    list(pool.map(lambda n: self.run_one(agents[n % 2], n), numbers))
                    gc.collect()
                    self.series.append((numbers[-1] + 1, resources(models)))
                elapsed = time.perf_counter() - started
            after = settle(before, models)
            for model in models:
                model.close()
            closed = settle(before, models)
        self.report(before, after, closed, elapsed)
        return 1 if self.stuck or self.foreign else 0

    def report(
        self,
        before: dict[str, float],
        after: dict[str, float],
        closed: dict[str, float],
        elapsed: float,
    ) -> None:
        args = self.args
        print(
            f"soak: {args.runs} runs (thread and loop mode alternating), concurrency "
            f"{args.concurrency}, fault rate {args.fault_rate:.0%} of requests, dispose rate "
            f"{args.dispose_rate:.0%}, bound {args.bound:g} s, seed {args.seed}: {elapsed:.0f} s"
        )
        for kind, count in self.outcomes.most_common():
            print(f"  {kind:<28} {count:>6}")
        print(f"  stuck runs: {len(self.stuck)}  {self.stuck[:10]}")
        print(f"  errors outside RxReactError: {len(self.foreign)}  {self.foreign[:5]}")
        print(
            "  resources: after the warm-up / after each tenth of the runs / idle after the "
            "soak / after closing the models' connection pools"
        )
        for key in before:
            middle = " ".join(f"{sample[key]:>6g}" for _, sample in self.series)
            print(f"  {key:<8} {before[key]:>6g} | {middle} | {after[key]:>6g} | {closed[key]:>6g}")


def settle(
    before: dict[str, float], models: list[OpenAIChatModel], timeout: float = 20.0
) -> dict[str, float]:
    """Resources once the process is idle again: threads of ended attempts and tools get up
    to ``timeout`` s to finish (kept-alive connections and their server threads stay)."""
    deadline = time.monotonic() + timeout
    now = resources(models)
    while time.monotonic() < deadline and now["threads"] > before["threads"]:
        time.sleep(0.2)
        gc.collect()
        now = resources(models)
    return now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--fault-rate", type=float, default=0.10)
    parser.add_argument("--dispose-rate", type=float, default=0.10)
    parser.add_argument("--bound", type=float, default=60.0, help="seconds before a run is stuck")
    parser.add_argument("--seed", type=int, default=11)
    sys.exit(Soak(parser.parse_args()).main())


if __name__ == "__main__":
    main()
