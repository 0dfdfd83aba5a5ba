"""agent.iter / iter_text / arun / acall: blocking and awaitable views of one run."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from cancellable import SlowTool
from reactivex.testing import TestScheduler

from rxreact import (
    FinalAnswer,
    OpenAIChatModel,
    ReactAgent,
    ScriptedModel,
    ServerError,
    Tool,
    tool,
)
from rxreact.model.scripted.replies import HTTPErrorReply, Script, text_reply, tool_call_reply
from rxreact.rx._blocking import _Buffer
from rxreact.testing import MockOpenAIServer

MakeAgent = Callable[..., ReactAgent]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@pytest.fixture
def http_agent() -> Iterator[MakeAgent]:
    opened: list[tuple[MockOpenAIServer, OpenAIChatModel]] = []

    def make(script: Script, *tools: Tool) -> ReactAgent:
        server = MockOpenAIServer(script).start()
        model = OpenAIChatModel("mock", base_url=server.base_url, max_retries=0)
        opened.append((server, model))
        return ReactAgent(model, tools)

    yield make
    for server, model in opened:
        model.close()
        server.stop()


def _weather_script() -> Script:
    return [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply("Sunny in Paris.")]


def test_iter_yields_the_whole_run_in_order(http_agent: MakeAgent) -> None:
    agent = http_agent(_weather_script(), get_weather)
    events = list(agent.iter("Weather?"))
    assert events[0].type == "round_started"
    assert "tool_result" in [e.type for e in events]
    assert isinstance(events[-1], FinalAnswer)
    assert events[-1].text == "Sunny in Paris."


def test_iter_text_is_the_answer_text(http_agent: MakeAgent) -> None:
    agent = http_agent(_weather_script(), get_weather)
    pieces = list(agent.iter_text("Weather?"))
    assert len(pieces) > 1
    assert "".join(pieces) == "Sunny in Paris."


def test_leaving_the_loop_cancels_the_run(http_agent: MakeAgent) -> None:
    slow = SlowTool()
    agent = http_agent([tool_call_reply(("slow", {})), text_reply("never")], slow.tool)
    for event in agent.iter("q"):
        if event.type == "tool_execution_started":
            assert slow.running.wait(10)  # the tool is running; leave the loop now
            break
    assert slow.tokens[0].wait(10)  # set by the disposal when the loop was left


def test_an_error_ends_the_loop_with_it(http_agent: MakeAgent) -> None:
    agent = http_agent([HTTPErrorReply(503, "overloaded")])
    events = agent.iter("q")
    assert next(events).type == "round_started"
    with pytest.raises(ServerError, match="overloaded"):
        next(events)


def test_iter_in_virtual_time() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([text_reply("Hello there.", interval=0.5)])
    agent = ReactAgent(model, scheduler=scheduler)
    assert "".join(agent.iter_text("Hi")) == "Hello there."
    assert scheduler.clock > 0  # the reply played on the virtual clock


def test_the_buffer_holds_the_producer_back() -> None:
    """Whenever the consumer takes an item, the producer is at most one item past the bound."""
    capacity = 2
    buffer: _Buffer[int] = _Buffer(capacity)
    produced: list[int] = []

    def produce() -> None:
        for i in range(50):
            buffer.on_next(i)
            produced.append(i)
        buffer.on_completed()

    producer = threading.Thread(target=produce)
    producer.start()
    taken: list[int] = []
    while item := buffer.take():
        # produced only grows after on_next returned, so it lags what is buffered
        assert len(produced) <= len(taken) + capacity + 1
        taken.append(item[0])
    producer.join(10)
    assert taken == list(range(50))


def test_a_closed_buffer_releases_a_waiting_producer() -> None:
    buffer: _Buffer[int] = _Buffer(1)
    buffer.on_next(0)
    returned = threading.Event()

    def produce() -> None:
        buffer.on_next(1)  # full: waits for room or close
        returned.set()

    producer = threading.Thread(target=produce)
    producer.start()
    buffer.close()
    assert returned.wait(10)
    producer.join(10)


def test_arun_and_acall(http_agent: MakeAgent) -> None:
    agent = http_agent([*_weather_script(), text_reply("Still sunny.")], get_weather)

    async def main() -> tuple[str, int, str]:
        result = await agent.arun("Weather?")
        answer = await agent.acall("And now?")
        return result.answer, len(result.messages), answer

    assert asyncio.run(main()) == ("Sunny in Paris.", 4, "Still sunny.")


def test_arun_raises_the_runs_error(http_agent: MakeAgent) -> None:
    agent = http_agent([HTTPErrorReply(503, "overloaded")])
    with pytest.raises(ServerError, match="overloaded"):
        asyncio.run(agent.arun("q"))


def test_cancelling_arun_cancels_the_run(http_agent: MakeAgent) -> None:
    async def main() -> SlowTool:
        running = asyncio.Event()
        loop = asyncio.get_running_loop()
        slow = SlowTool(started=lambda: loop.call_soon_threadsafe(running.set))
        agent = http_agent([tool_call_reply(("slow", {})), text_reply("never")], slow.tool)
        task = asyncio.create_task(agent.arun("q"))
        await asyncio.wait_for(running.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return slow

    assert asyncio.run(main()).tokens[0].wait(10)


def test_arun_in_virtual_time() -> None:
    agent = ReactAgent(ScriptedModel([text_reply("Hi!")]), scheduler=TestScheduler())
    assert asyncio.run(agent.acall("Hello")) == "Hi!"
