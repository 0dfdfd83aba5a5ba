"""A subscriber whose ``on_next`` raises ends the run, whatever event it raised on.

The run is a real one over loopback HTTP (both I/O modes): a tool round then an answer. For
every k, a subscriber raises on the k-th event; the exception must reach its ``on_error``, the
conversation must be free at once and nothing of the turn stored (except after
``final_answer``, which announces a turn already stored). Every wait is an event with a
timeout: a run left stuck fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from cancellable import SlowTool
from redis_server import RedisServer
from test_runs import Collector, Gate, gated_script

from rxreact import (
    CancellationToken,
    InMemoryChatMemory,
    ReactAgent,
    RedisEventLog,
    Verdict,
    tool,
)
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


class Boom(Exception):
    """What the test's subscriber raises."""


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def weather_desk(request: ChatRequest) -> Any:
    """A tool call for a new question, an answer once its result is in (whatever the history
    before: a conversation's earlier turns do not change the shape of this one)."""
    if request.messages[-1].role == "user":
        return tool_call_reply(("get_weather", {"city": "Oslo"}))
    return text_reply("Oslo is sunny, as the tool said.", size=8)


class Raising:
    """A subscriber that raises on the event ``where`` picks, and records how the run ended."""

    def __init__(self, where: Callable[[int, Any], bool], on_error_raises: bool = False) -> None:
        self.where = where
        self.on_error_raises = on_error_raises
        self.count = 0
        self.raised: Any = None
        self.error: Exception | None = None
        self.completed = False
        self.ended = threading.Event()

    def on_next(self, event: Any) -> None:
        self.count += 1
        if self.raised is None and self.where(self.count, event):
            self.raised = event
            raise Boom(f"raised on event {self.count} ({event.type})")

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.ended.set()
        if self.on_error_raises:
            raise Boom("on_error raised too")

    def on_completed(self) -> None:
        self.completed = True
        self.ended.set()

    def wait(self) -> Raising:
        assert self.ended.wait(10), f"the run never ended after raising on {self.raised}"
        return self


def event_types(agent: ReactAgent, conversation_id: str | None = None) -> list[str]:
    collected = Collector(agent.stream("Weather in Oslo?", conversation_id)).wait()
    assert collected.error is None
    return [event.type for event in collected.events]


def test_raising_on_any_event_of_a_tool_round_run_ends_it(serve_model: Any) -> None:
    _, model = serve_model(weather_desk)
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, [get_weather], memory=memory)
    types = event_types(agent, "c")
    assert "round_finished" in types and "tool_result" in types
    for k in range(1, len(types) + 1):
        stored = len(memory.load("c"))
        subscriber = Raising(lambda count, _, k=k: count == k)
        agent.stream("Weather in Oslo?", "c").subscribe(
            subscriber.on_next, subscriber.on_error, subscriber.on_completed
        )

        subscriber.wait()
        assert subscriber.raised.type == types[k - 1]
        assert isinstance(subscriber.error, Boom) and not subscriber.completed
        lease = memory.try_acquire("c", "the next run", ttl=5)  # free the moment it ended
        assert lease is not None, f"raising on {types[k - 1]} left the conversation held"
        memory.release(lease)
        # final_answer announces a turn already stored; before it, nothing is
        expected = stored + 4 if types[k - 1] == "final_answer" else stored
        assert len(memory.load("c")) == expected, f"raising on {types[k - 1]}"


def test_raising_on_any_event_as_a_hot_runs_follower_ends_that_follower(
    serve_model: Any,
) -> None:
    _, model = serve_model(weather_desk)
    agent = ReactAgent(model, [get_weather])
    types = event_types(agent)
    for k in range(1, len(types) + 1):
        run = agent.start("Weather in Oslo?")
        subscriber = Raising(lambda count, _, k=k: count == k)
        run.events().subscribe(subscriber.on_next, subscriber.on_error, subscriber.on_completed)

        assert isinstance(subscriber.wait().error, Boom) and not subscriber.completed
        assert subscriber.raised.type == types[k - 1]
        # A follower leaves the run as a disposal would: the hot run goes on to its answer.
        assert run.result(timeout=10).answer == "Oslo is sunny, as the tool said."


def test_a_redis_follower_that_raises_ends_with_its_error(
    serve_model: Any, redis_server: RedisServer
) -> None:
    _, model = serve_model(gated_script())
    gate = Gate()
    log = RedisEventLog(redis_server.url)
    try:
        run = ReactAgent(model, [gate.tool], event_log=log).start("q")
        subscriber = Raising(lambda _, event: event.type == "tool_execution_started")
        run.events().subscribe(subscriber.on_next, subscriber.on_error, subscriber.on_completed)
        assert isinstance(subscriber.wait().error, Boom)
        gate.opened.set()
        assert run.result(timeout=10).answer  # the run itself goes on
    finally:
        log.close()


def test_raising_on_a_tool_result_sets_the_other_running_tools_tokens(serve_model: Any) -> None:
    slow = SlowTool()

    @tool
    def quick(token: CancellationToken) -> str:
        """Answers once ``slow`` runs, so its result comes while ``slow`` still runs."""
        slow.running.wait(10)
        return "quick"

    server, model = serve_model([tool_call_reply(("slow", {}), ("quick", {})), text_reply("x")])
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, [slow.tool, quick], memory=memory)
    subscriber = Raising(lambda _, event: event.type == "tool_result")
    agent.stream("q", "c").subscribe(
        subscriber.on_next, subscriber.on_error, subscriber.on_completed
    )

    assert isinstance(subscriber.wait().error, Boom)
    assert subscriber.raised.name == "quick"
    assert slow.tokens[0].cancelled
    assert len(server.requests) == 1  # no further round
    assert memory.load("c") == []


def test_raising_on_a_calls_start_never_runs_its_tool(serve_model: Any) -> None:
    ran: list[str] = []

    @tool
    def first() -> str:
        """Recorded when it runs."""
        ran.append("first")
        return "1"

    @tool
    def second() -> str:
        """Recorded when it runs."""
        ran.append("second")
        return "2"

    _, model = serve_model([tool_call_reply(("first", {}), ("second", {})), text_reply("x")])
    agent = ReactAgent(model, [first, second])
    subscriber = Raising(
        lambda _, event: event.type == "tool_execution_started" and event.name == "second"
    )
    agent.stream("q").subscribe(subscriber.on_next, subscriber.on_error, subscriber.on_completed)

    assert isinstance(subscriber.wait().error, Boom)
    assert "second" not in ran


def test_raising_mid_stream_closes_the_http_stream(serve_model: Any) -> None:
    server, model = serve_model([[*text_reply("partial")[:2], Hang()]])
    subscriber = Raising(lambda _, event: event.type == "text_delta")
    ReactAgent(model).stream("q").subscribe(
        subscriber.on_next, subscriber.on_error, subscriber.on_completed
    )
    assert isinstance(subscriber.wait().error, Boom)
    assert server.wait_for_disconnects(1, timeout=10)


def test_raising_on_a_judges_verdict_ends_the_run(serve_model: Any) -> None:
    _, model = serve_model([text_reply("fine")])
    agent = ReactAgent(model, judge=lambda question, draft, history: Verdict(passed=True))
    subscriber = Raising(lambda _, event: event.type == "answer_validated")
    agent.stream("q").subscribe(subscriber.on_next, subscriber.on_error, subscriber.on_completed)
    assert isinstance(subscriber.wait().error, Boom) and not subscriber.completed


@pytest.mark.parametrize("event_type", ["round_started", "round_finished", "tool_result"])
def test_when_on_error_raises_too_the_run_is_disposed(
    serve_model: Any, event_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, model = serve_model(weather_desk)
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, [get_weather], memory=memory)
    subscriber = Raising(lambda _, event: event.type == event_type, on_error_raises=True)
    agent.stream("Weather in Oslo?", "c").subscribe(
        subscriber.on_next, subscriber.on_error, subscriber.on_completed
    )
    assert isinstance(subscriber.wait().error, Boom)
    lease = memory.try_acquire("c", "the next run", ttl=5)
    assert lease is not None
    memory.release(lease)
    assert memory.load("c") == []
