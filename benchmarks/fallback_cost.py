"""``python -m benchmarks.fallback_cost``: what a ``FallbackModel`` costs while its first model
is healthy, and how fast it restarts an answer cut half-way.

1. **Calls per chunk** (counted, not timed: timings on a shared two-core machine move by more
   than the 2 % the target allows). A fresh process profiles every thread through one agent
   run of an answer of N chunks from the loopback mock, over HTTP in both I/O modes, with the
   model alone and inside ``FallbackModel([model, spare])``; the per-chunk cost is the
   difference between runs of 600 and 200 chunks over 400, as in ``benchmarks.chunk_calls``.
   A ``ScriptedModel`` (whose Observable binds ``on_next`` once, at subscribe) is shown too:
   there the chain pays one call a chunk.
2. **Restart latency**: the first model streams, then its connection is reset mid-answer; the
   second model's first token comes ``--latency`` seconds after its request. Reported: the
   time from the cut (``model_switched``) to the first text of the restarted round, next to the
   second model's own first-token latency measured alone.

    python -m benchmarks.fallback_cost [--latency 0.05] [--runs 20]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

SMALL, BIG = 200, 600
KINDS = ("http-thread", "http-loop", "scripted")


def child(kind: str, chained: bool, chunks: int) -> collections.Counter[str]:
    """Calls by function through one run of an answer of ``chunks`` chunks."""
    import rxreact
    from rxreact.model.scripted.replies import text_reply
    from rxreact.testing import MockOpenAIServer

    answer = " ".join(f"w{i}" for i in range(chunks))
    reply = text_reply(answer, pieces=chunks)
    server = None
    if kind == "scripted":
        model: Any = rxreact.ScriptedModel(lambda request: reply)
        spare: Any = rxreact.ScriptedModel(lambda request: reply)
    else:
        server = MockOpenAIServer(lambda request: reply).start()
        io = kind.split("-")[1]
        model = rxreact.OpenAIChatModel("m", base_url=server.base_url, io=io)  # type: ignore[arg-type]
        spare = rxreact.OpenAIChatModel("spare", base_url=server.base_url, io=io)  # type: ignore[arg-type]
    if chained:
        model = rxreact.FallbackModel([model, spare])
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            name = threading.current_thread().name
            if "process_request" in name or name == "mock-openai":
                return  # the mock server's side of the socket is not the client's cost
            code = frame.f_code
            counts["/".join(code.co_filename.split("/")[-2:]) + ":" + code.co_name] += 1

    threading.setprofile(profile)  # every thread the run starts from here on
    sys.setprofile(profile)
    done = rxreact.ReactAgent(model).run("q")
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    if done.answer != answer:
        raise RuntimeError("wrong answer")
    if server is not None:
        server.stop()
    return counts


def measure(kind: str, chained: bool, chunks: int) -> collections.Counter[str]:
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    command = [sys.executable, __file__, "--child", kind, str(int(chained)), str(chunks)]
    out = subprocess.run(
        command, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True
    )
    return collections.Counter(json.loads(out.stdout.splitlines()[-1]))


def per_chunk(kind: str, chained: bool) -> tuple[float, dict[str, float]]:
    small, big = measure(kind, chained, SMALL), measure(kind, chained, BIG)
    span = BIG - SMALL
    total = (sum(big.values()) - sum(small.values())) / span
    names = {n for n in set(small) | set(big) if abs(big[n] - small[n]) >= span / 4}
    return total, {n: (big[n] - small[n]) / span for n in sorted(names)}


def restart_latency(latency: float, runs: int) -> tuple[float, float]:
    """Median seconds: the second model's first token alone, and cut -> first restarted text."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fault_server import Fault, FaultServer

    import rxreact
    from rxreact.model.scripted.replies import Pause, text_reply
    from rxreact.testing import MockOpenAIServer

    def second_reply(request: Any) -> Any:
        return [Pause(latency), *text_reply("the whole answer")]

    alone: list[float] = []
    restart: list[float] = []
    with (
        FaultServer(lambda n, body: Fault("reset_mid")) as first,
        MockOpenAIServer(second_reply) as mock,
    ):
        a = rxreact.OpenAIChatModel("a", base_url=first.base_url, max_retries=0)
        b = rxreact.OpenAIChatModel("b", base_url=mock.base_url, max_retries=0)
        chain = rxreact.FallbackModel([a, b], breaker=None)
        solo, agent = rxreact.ReactAgent(b), rxreact.ReactAgent(chain)
        solo.run("warm"), agent.run("warm")
        for _ in range(runs):
            start = time.perf_counter()
            first_text = _first_text_time(solo, lambda event: True)
            alone.append(first_text - start)
            switched: list[float] = []

            def after_switch(event: Any, switched: list[float] = switched) -> bool:
                if event.type == "model_switched":
                    switched.append(time.perf_counter())
                return bool(switched) and event.type == "text_delta"

            first_text = _first_text_time(agent, after_switch)
            restart.append(first_text - switched[0])
    return statistics.median(alone), statistics.median(restart)


def _first_text_time(agent: Any, counts: Any) -> float:
    """When the first text delta ``counts`` accepts arrived (the run then goes to its end)."""
    seen: list[float] = []
    done = threading.Event()

    def on_next(event: Any) -> None:
        if counts(event) and event.type == "text_delta" and not seen:
            seen.append(time.perf_counter())

    agent.stream("q").subscribe(on_next, lambda error: done.set(), done.set)
    if not done.wait(30) or not seen:
        raise RuntimeError("the run did not stream its answer")
    return seen[0]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=["calls", "restart"], default=None)
    args = parser.parse_args(argv)
    if args.only in (None, "calls"):
        for kind in KINDS:
            alone, _ = per_chunk(kind, False)
            chained, _ = per_chunk(kind, True)
            extra = (chained - alone) / alone * 100
            print(
                f"{kind:12} alone {alone:6.2f}  chained {chained:6.2f} calls/chunk ({extra:+.1f} %)"
            )
    if args.only in (None, "restart"):
        alone, restart = restart_latency(args.latency, args.runs)
        print(
            f"restart after a cut: {restart * 1000:.1f} ms to the first text "
            f"(the second model's own first token: {alone * 1000:.1f} ms)"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, chained, chunks = sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
        print(json.dumps(child(kind, chained, chunks)))
    else:
        main(sys.argv[1:])
