"""A finished run is freed by reference counting: it leaves nothing for the cycle collector.

At thousands of concurrent runs, a run's state kept alive by a reference cycle after it ended
is heap that every full collection walks (seconds per collection at 10,000 conversations).
Each test runs with the collector off, then collects with ``DEBUG_SAVEALL``: whatever was only
freeable as a cycle is in ``gc.garbage``.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rxreact import InMemoryEventLog, ReactAgent, SQLiteChatMemory, tool
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.usefixtures("io_mode")

OURS = ("rxreact", "httpx", "httpcore", "reactivex")


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def _io_threads_ended() -> None:
    """Wait for thread mode's I/O threads: one may end after its run returned, and what it
    lets go of then belongs to that run (not to whatever is measured next)."""
    for thread in threading.enumerate():
        if thread.name.startswith("rxreact-http"):
            thread.join(10)


def cyclic_garbage(action: Callable[[], Any]) -> list[str]:
    """The types (of the libraries a run is made of) that ``action`` left in reference cycles."""
    _io_threads_ended()
    gc.collect()
    gc.disable()
    try:
        action()
        _io_threads_ended()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
    finally:
        gc.set_debug(0)
        gc.enable()
    found = [
        f"{type(o).__module__}.{type(o).__qualname__}"
        for o in gc.garbage
        if type(o).__module__.split(".")[0] in OURS
    ]
    gc.garbage.clear()
    return found


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    script = [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply("Sunny.")] * 4
    with MockOpenAIServer(script) as server:
        yield server


def model(server: MockOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel("m", base_url=server.base_url, api_key="k")


def test_a_finished_run_leaves_no_cycles(server: MockOpenAIServer) -> None:
    with model(server) as m:
        agent = ReactAgent(m, [get_weather])
        assert agent.call("warm up?") == "Sunny."  # imports, pools, first connection
        assert cyclic_garbage(lambda: agent.call("weather?")) == []


def test_a_run_with_memory_and_a_hot_run_leave_no_cycles(
    server: MockOpenAIServer, tmp_path: Path
) -> None:
    with model(server) as m, SQLiteChatMemory(tmp_path / "chat.db") as memory:
        agent = ReactAgent(m, [get_weather], memory=memory, event_log=InMemoryEventLog())
        assert agent.start("warm up?", "c").result(10).answer == "Sunny."

        def both() -> None:
            assert agent.call("weather?", "c") == "Sunny."
            assert agent.start("and now?", "c").result(10).answer == "Sunny."

        assert cyclic_garbage(both) == []


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_a_model_that_goes_away_leaves_no_cycles(kind: str) -> None:
    """A model holds its endpoint, which must not hold the model back."""
    from rxreact import AnthropicModel, OpenAIResponsesModel

    make = {"chat": OpenAIChatModel, "responses": OpenAIResponsesModel}.get(kind, AnthropicModel)

    def made_and_dropped() -> None:
        make("m", base_url="http://127.0.0.1:9/v1", api_key="k")._endpoint.headers_for(True)

    assert cyclic_garbage(made_and_dropped) == []


def test_a_relative_schedule_that_fires_leaves_no_cycle() -> None:
    """A timer entry holds its task and the task its entry; once the timer fires, neither
    may keep the other (else every fired timer is a cycle for the collector)."""
    import threading

    from rxreact.scheduling import shared_scheduler

    scheduler = shared_scheduler("timer", 2)
    fired = threading.Event()

    def wait_for_timer() -> None:
        scheduler.schedule_relative(0.01, lambda *_: fired.set())
        assert fired.wait(5)

    assert "rxreact.scheduling._Task" not in cyclic_garbage(wait_for_timer)
