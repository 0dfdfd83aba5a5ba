"""``python -m benchmarks.fallback_soak``: agent runs on a three-model ``FallbackModel``, every
model's loopback server faulty at random.

Each run is a real ``ReactAgent`` run (tool rounds, then the answer) over real sockets, the I/O
modes alternating, with circuit breakers on (short windows, so they open, half-open and close
during the soak). Every request to every model meets a random fault (``--fault-rate``):
429/503, resets before and after the first chunk, a stream cut mid-answer, a stall past the
idle timeout, garbage, a body with no end. Every run must end (answer or typed error) within
``--bound`` seconds: one that does not is **stuck**. Every answered run's stored conversation
must be a valid history: each tool call answered once, in order, no call cut half-way
(``call_cut``) in it, no switch marker stored, ending on an answer; a failed run stores
nothing.

    python -m benchmarks.fallback_soak [--runs 2000] [--concurrency 8] [--seed 31]

Exit status 1 if any run was stuck, any history invalid, or any error not an ``RxReactError``.
``tests/test_fallback_soak.py`` runs a smaller one (200 runs) in the suite.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fault_server import Fault, FaultServer, ok

from rxreact import (
    CircuitBreaker,
    FallbackModel,
    InMemoryChatMemory,
    OpenAIChatModel,
    ReactAgent,
    tool,
)
from rxreact.errors import RxReactError
from rxreact.messages import AssistantMessage, Message, ToolMessage
from rxreact.model.retry_policy import Backoff
from rxreact.model.switch import SWITCH_TAG

FAULTS = [
    Fault("status", status=429, retry_after="0"),
    Fault("status", status=503),
    Fault("reset"),
    Fault("reset_mid"),
    Fault("endless", interval=0.002, size=5),
    Fault("endless", interval=5.0),  # a stall mid-answer, past the idle timeout
    Fault("stall_body"),
    Fault("garbage"),
    Fault("no_finish"),
    Fault("tool_call_cut"),  # a call cut half-way through its arguments
]
HEALTHY = [ok("Sunny in Oslo."), Fault("tool_call", text="Oslo")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@dataclass
class Report:
    """What a soak saw."""

    runs: int = 0
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    stuck: int = 0
    invalid: list[str] = field(default_factory=list)
    foreign_errors: list[str] = field(default_factory=list)
    switches: int = 0
    restarts: int = 0

    @property
    def ok(self) -> bool:
        return not (self.stuck or self.invalid or self.foreign_errors)

    def lines(self) -> list[str]:
        return [
            f"runs {self.runs}: {dict(self.outcomes)}",
            f"model switches {self.switches}, rounds restarted {self.restarts}",
            f"stuck {self.stuck}, invalid histories {len(self.invalid)}, "
            f"non-rxreact errors {len(self.foreign_errors)}",
            *self.invalid[:5],
            *self.foreign_errors[:5],
        ]


def history_problem(history: list[Message]) -> str | None:
    """What is wrong with a stored conversation, or ``None`` when it is a valid history."""
    open_calls: list[str] = []
    for message in history:
        if isinstance(message, AssistantMessage):
            if open_calls:
                return f"calls {open_calls} unanswered before the next assistant message"
            if any(item.provider == SWITCH_TAG for item in message.replay):
                return "a switch marker was stored"
            for call in message.tool_calls:
                if call.id == "call_cut":
                    return "a call cut half-way was stored"
                open_calls.append(call.id)
        elif isinstance(message, ToolMessage):
            if not open_calls or open_calls[0] != message.tool_call_id:
                return f"result for {message.tool_call_id}, expected {open_calls[:1]}"
            open_calls.pop(0)
    if open_calls:
        return f"calls {open_calls} never answered"
    last = history[-1] if history else None
    if not isinstance(last, AssistantMessage) or last.tool_calls:
        return "the conversation does not end on an answer"
    return None


def soak(runs: int, *, concurrency: int = 8, seed: int = 31, fault_rate: float = 0.5) -> Report:
    """Run the soak; returns its report."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def script(number: int, body: bytes) -> Fault:
        with lock:
            if rng.random() < fault_rate:
                return rng.choice(FAULTS)
            return rng.choice(HEALTHY)

    report = Report()
    with ExitStack() as stack:
        servers = [stack.enter_context(FaultServer(script)) for _ in range(3)]
        memory = InMemoryChatMemory()
        agents = []
        for io in ("thread", "loop"):
            models = [
                stack.enter_context(
                    OpenAIChatModel(
                        f"m{i}",
                        base_url=server.base_url,
                        io=io,
                        max_retries=1,
                        backoff=Backoff(base=0.005, cap=0.01),
                        first_chunk_timeout=0.5,
                        chunk_timeout=0.3,
                    )
                )
                for i, server in enumerate(servers)
            ]
            breaker = CircuitBreaker(failures=5, window=1.0, cooldown=0.1)
            model = FallbackModel(models, breaker=breaker)
            agents.append(ReactAgent(model, [get_weather], memory=memory, max_rounds=3))
        slots = threading.Semaphore(concurrency)
        threads = [
            threading.Thread(target=_one, args=(agents[n % 2], n, memory, report, slots, lock))
            for n in range(runs)
        ]
        for thread in threads:
            slots.acquire()
            thread.start()
        for thread in threads:
            thread.join()
    return report


def _one(
    agent: ReactAgent,
    number: int,
    memory: InMemoryChatMemory,
    report: Report,
    slots: threading.Semaphore,
    lock: threading.Lock,
) -> None:
    try:
        events: list[Any] = []
        outcome: list[BaseException] = []
        done = threading.Event()

        def on_error(error: Exception) -> None:
            outcome.append(error)
            done.set()

        conversation = f"soak-{number}"
        subscription = agent.stream("Weather in Oslo?", conversation_id=conversation).subscribe(
            events.append, on_error, done.set
        )
        ended = done.wait(30.0)
        if not ended:
            subscription.dispose()
        history = memory.load(conversation)
        with lock:
            report.runs += 1
            report.switches += sum(e.type == "model_switched" for e in events)
            report.restarts += sum(e.type == "round_restarted" for e in events)
            if not ended:
                report.stuck += 1
                return
            if outcome:
                error = outcome[0]
                report.outcomes[type(error).__name__] += 1
                if not isinstance(error, RxReactError):
                    report.foreign_errors.append(f"run {number}: {error!r}")
                if history:
                    report.invalid.append(f"run {number} failed but stored {len(history)}")
                return
            report.outcomes["answered"] += 1
            problem = history_problem(list(history))
            if problem is not None:
                report.invalid.append(f"run {number}: {problem}")
    finally:
        slots.release()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--fault-rate", type=float, default=0.5)
    args = parser.parse_args(argv)
    report = soak(
        args.runs, concurrency=args.concurrency, seed=args.seed, fault_rate=args.fault_rate
    )
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
