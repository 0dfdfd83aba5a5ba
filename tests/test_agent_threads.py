"""The agent on real thread pools: delivery threads, serialization, blocking and asyncio views."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from rxreact import CancellationToken, ReactAgent, tool
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply


def make_agent() -> ReactAgent:
    barrier = threading.Barrier(3, timeout=10)

    @tool
    def meet(name: str, token: CancellationToken) -> str:
        """Waits until all three calls run at once: proves they are concurrent."""
        barrier.wait()
        return f"{name} met"

    model = ScriptedModel(
        [
            tool_call_reply(
                ("meet", {"name": "a"}), ("meet", {"name": "b"}), ("meet", {"name": "c"})
            ),
            text_reply("All met. " * 50, interval=0.0),
        ]
    )
    return ReactAgent(model, [meet])


def test_events_are_serialized_and_never_on_the_subscribing_thread() -> None:
    agent = make_agent()
    caller = threading.get_ident()
    inside = threading.Lock()
    overlaps: list[Any] = []
    threads: set[int] = set()
    events: list[Any] = []
    done = threading.Event()

    def on_next(event: Any) -> None:
        if not inside.acquire(blocking=False):
            overlaps.append(event)
            return
        try:
            threads.add(threading.get_ident())
            events.append(event)
        finally:
            inside.release()

    agent.stream("q").subscribe(on_next, lambda e: done.set(), done.set)
    assert done.wait(20)
    assert not overlaps
    assert caller not in threads
    assert events[-1].type == "final_answer"
    assert [e.content for e in events if e.type == "tool_result"] != []
    assert sorted(e.content for e in events if e.type == "tool_result") == [
        "a met",
        "b met",
        "c met",
    ]


def test_run_and_call_block_for_the_answer() -> None:
    result = make_agent().run("q")
    assert result.answer == "All met. " * 50
    assert result.rounds == 2


def test_astream_yields_the_same_events() -> None:
    async def collect() -> list[str]:
        return [event.type async for event in make_agent().astream("q")]

    types = asyncio.run(collect())
    assert types[0] == "round_started" and types[-1] == "final_answer"
    assert types.count("tool_result") == 3


def test_tool_executions_start_in_call_order_on_real_threads() -> None:
    @tool
    def echo(x: int) -> str:
        """Echo."""
        return str(x)

    for _ in range(5):
        model = ScriptedModel(
            [tool_call_reply(*[("echo", {"x": i}) for i in range(6)]), text_reply("ok")]
        )
        events: list[Any] = []
        done = threading.Event()
        ReactAgent(model, [echo]).stream("q").subscribe(events.append, on_completed=done.set)
        assert done.wait(10)
        started = [e.call_id for e in events if e.type == "tool_execution_started"]
        assert started == [f"call_{i}" for i in range(6)]
