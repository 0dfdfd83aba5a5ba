"""FallbackModel over real sockets: two or three loopback servers with fault modes
(tests/fault_server.py), an agent on top, both I/O modes. Nothing sleeps: each test waits on
the run's end and on the servers' counters."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from fault_server import Fault, FaultServer, ok

from rxreact import (
    AuthenticationError,
    CircuitBreaker,
    FallbackModel,
    OpenAIChatModel,
    ReactAgent,
)
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.retry_policy import Backoff

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, cap=0.02)
REQUEST = ChatRequest(messages=(UserMessage(content="q"),))


class Run:
    """One agent run's events, waited for with a timeout."""

    def __init__(self, agent: ReactAgent, question: str = "q") -> None:
        self.events: list[Any] = []
        self.error: Exception | None = None
        self.done = threading.Event()
        agent.stream(question).subscribe(self.events.append, self._error, self.done.set)
        assert self.done.wait(20), "the run is stuck"

    def _error(self, error: Exception) -> None:
        self.error = error
        self.done.set()

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def text(self) -> str:
        return str(self.events[-1].text)


@contextmanager
def chain(
    *scripts: list[Fault], **options: Any
) -> Iterator[tuple[list[FaultServer], FallbackModel]]:
    model_options = {
        "max_retries": options.pop("max_retries", 0),
        "backoff": FAST,
        "first_chunk_timeout": options.pop("first_chunk_timeout", 5.0),
        "chunk_timeout": options.pop("chunk_timeout", 5.0),
    }
    options.setdefault("breaker", None)
    with ExitStack() as stack:
        servers = [stack.enter_context(FaultServer(script)) for script in scripts]
        models = [
            OpenAIChatModel(f"m{i}", base_url=s.base_url, **model_options)
            for i, s in enumerate(servers)
        ]
        fallback = stack.enter_context(FallbackModel(models, **options))
        yield servers, fallback


def test_first_model_down_takes_exactly_its_attempts_then_the_next_answers() -> None:
    with chain([Fault("status", status=503)] * 3, [ok("from b")], max_retries=2) as (
        (a, b),
        model,
    ):
        run = Run(ReactAgent(model))
        assert run.error is None and run.text == "from b"
        assert a.requests == 3 and b.requests == 1  # 1 + max_retries, then the next model
        assert "round_restarted" not in run.types and "model_switched" in run.types


def test_a_refused_key_does_not_fall_back() -> None:
    with chain([Fault("status", status=401)], [ok()]) as ((a, b), model):
        run = Run(ReactAgent(model))
        assert isinstance(run.error, AuthenticationError)
        assert (a.requests, b.requests) == (1, 0)


def test_a_stream_cut_mid_answer_restarts_on_the_next_model() -> None:
    with chain([Fault("endless", size=3, interval=0.01)], [ok("whole answer")]) as (_, model):
        run = Run(ReactAgent(model))
        assert run.error is None and run.text == "whole answer"
        restart = run.types.index("round_restarted")
        assert run.types[restart - 1] == "model_switched"
        shown = "".join(e.delta for e in run.events[:restart] if e.type == "text_delta")
        assert shown.startswith("more ")


def test_a_stall_mid_answer_past_the_idle_timeout_moves_on_and_closes_the_socket() -> None:
    with chain([Fault("endless", interval=30.0)], [ok("after the stall")], chunk_timeout=0.3) as (
        (a, _),
        model,
    ):
        run = Run(ReactAgent(model))
        assert run.error is None and run.text == "after the stall"
        assert "round_restarted" in run.types
        assert a.wait_for(lambda s: s.closed_by_client >= 1)


def test_three_servers_first_reset_second_cut_third_answers() -> None:
    with chain([Fault("reset")], [Fault("endless", size=2, interval=0.01)], [ok("third")]) as (
        servers,
        model,
    ):
        run = Run(ReactAgent(model))
        assert run.error is None and run.text == "third"
        switches = [(e.from_model, e.to_model) for e in run.events if e.type == "model_switched"]
        assert switches == [("openai:m0", "openai:m1"), ("openai:m1", "openai:m2")]
        assert [s.requests for s in servers] == [1, 1, 1]
        assert run.events[-1].usage_by_model.keys() <= {"openai:m2"}


def test_a_429_storm_opens_the_breaker_and_the_model_is_skipped() -> None:
    breaker = CircuitBreaker(failures=2, window=60, cooldown=60)
    storm = [Fault("status", status=429, retry_after="0")] * 10
    with chain(storm, [ok("b")] * 10, breaker=breaker) as ((a, b), model):
        for _ in range(4):
            assert Run(ReactAgent(model)).text == "b"
        assert model.breakers[0].state == "open"
        assert a.requests == 2 and b.requests == 4


def test_hedge_the_slow_first_byte_loses_and_its_server_sees_the_close_at_once() -> None:
    with chain([Fault("stall")] * 2, [ok("hedged")], hedge_after=0.05) as ((a, b), model):
        first_chunk = threading.Event()
        done = threading.Event()
        chunks: list[Any] = []

        def on_next(chunk: Any) -> None:
            chunks.append(chunk)
            first_chunk.set()

        model.stream(REQUEST).subscribe(on_next, lambda e: done.set(), done.set)
        assert first_chunk.wait(10)
        # The loser is disposed as the winner's first chunk comes: its socket is closed.
        assert a.wait_for(lambda s: s.closed_by_client >= 1, timeout=0.1)
        assert done.wait(10) and b.requests == 1
        assert "".join(c.text or "" for c in chunks) == "hedged"
        assert Run(ReactAgent(model)).text == "ok"  # and an agent on it, the same way
