"""Loop mode: the shared I/O loop, its backpressure valve, connection reuse, mode selection.

(Every HTTP-model behaviour runs in both modes in test_openai_model.py and test_agent_http.py;
these are the things only loop mode has.)
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from reactivex import operators as ops
from reactivex.scheduler import ThreadPoolScheduler

from rxreact.errors import ConfigurationError
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.http._aio import io_loop, on_io_loop
from rxreact.model.openai.client import DEFAULT_IO, OpenAIChatModel, run_on_io_loop
from rxreact.model.scripted.replies import text_reply
from rxreact.operators import deliver_on
from rxreact.rx import _valve
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


class Collect:
    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: Exception | None = None
        self.done = threading.Event()

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: Exception) -> None:
        self.error = error
        self.done.set()

    def on_completed(self) -> None:
        self.done.set()

    def text(self) -> str:
        assert self.done.wait(10), "the stream did not end"
        assert self.error is None
        return assemble(self.items).content or ""


def test_a_completed_stream_leaves_its_connection_in_the_pool() -> None:
    script = [text_reply(word) for word in ("one", "two", "three", "four")]
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel("m", base_url=server.base_url, io="loop") as model,
    ):
        for word in ("one", "two", "three"):
            collect = Collect()
            model.stream(REQUEST).subscribe(collect.on_next, collect.on_error, collect.on_completed)
            assert collect.text() == word  # completed: its connection is back in the pool
        assert model.complete(REQUEST).content == "four"

    assert server.connections == 1


def test_a_slow_subscriber_holds_its_stream_back_while_others_flow() -> None:
    chunks, max_buffer = 20_000, 16
    long_text = "x" * chunks
    pool = ThreadPoolScheduler(2)
    release = threading.Event()
    produced = [0]  # chunks the model handed on, counted on the I/O loop
    held = threading.Event()

    def count(_: Any) -> None:
        produced[0] += 1
        if produced[0] > max_buffer + 1:
            held.set()  # past here the consumer is full: the valve must be closed by now

    slow = Collect()

    def slow_next(item: Any) -> None:
        release.wait(10)
        slow.on_next(item)

    with (
        MockOpenAIServer([text_reply(long_text, size=1), text_reply("quick")]) as server,
        OpenAIChatModel("m", base_url=server.base_url, io="loop") as model,
    ):
        subscription = (
            model.stream(REQUEST)
            .pipe(ops.do_action(count), deliver_on(pool, max_buffer=max_buffer))
            .subscribe(slow_next, slow.on_error, slow.on_completed)
        )
        try:
            assert held.wait(10)
            other = Collect()
            model.stream(REQUEST).pipe(deliver_on(pool, max_buffer=max_buffer)).subscribe(
                other.on_next, other.on_error, other.on_completed
            )
            # The other stream completes on the same loop while the slow one is held back ...
            assert other.text() == "quick"
            # ... to its buffer, one drained batch in delivery and the events of one socket
            # read (64 KiB; an event of this stream is over 64 bytes on the wire).
            assert produced[0] < 2 * max_buffer + 2 + 65536 // 64
            release.set()
            assert slow.text() == long_text
        finally:
            # A failed assertion must not leave a pool thread waiting on every item (the
            # executor's threads are joined at interpreter exit: the test run would hang).
            release.set()
            subscription.dispose()
    pool.executor.shutdown()


def test_the_valve_wakes_a_waiting_reader_from_another_thread() -> None:
    loop = io_loop()
    valve = _valve.Valve(loop)
    valve.close()

    async def wait() -> bool:
        await valve.wait_open()
        return on_io_loop()

    waiting = asyncio.run_coroutine_threadsafe(wait(), loop)
    assert not waiting.done()
    valve.open()
    assert waiting.result(5) is True
    assert not valve.closed


def test_a_consumer_finds_the_valve_of_the_task_that_emits_and_no_other() -> None:
    loop = io_loop()
    valve = _valve.Valve(loop)

    async def look() -> _valve.Valve | None:
        return _valve.current()

    async def emit() -> list[_valve.Valve | None]:
        task = asyncio.current_task()
        assert task is not None
        seen = [_valve.current()]  # not attached yet
        valve.attach(task)
        seen += [_valve.current(), await asyncio.create_task(look())]  # and another task's
        valve.detach(task)
        return [*seen, _valve.current()]

    found = asyncio.run_coroutine_threadsafe(emit(), loop).result(5)
    assert found == [None, valve, None, None]
    assert _valve.current() is None  # a thread with no loop: a blocking producer


def test_the_io_mode_follows_the_client_and_the_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RXREACT_IO", raising=False)
    url = "http://127.0.0.1:9/v1"
    aclient, client = httpx.AsyncClient(), httpx.Client()
    try:
        assert OpenAIChatModel("m", base_url=url, http_client=aclient).io == "loop"
        assert OpenAIChatModel("m", base_url=url, http_client=client).io == "thread"
        assert OpenAIChatModel("m", base_url=url, io="thread").io == "thread"
        assert OpenAIChatModel("m", base_url=url).io == DEFAULT_IO
        monkeypatch.setenv("RXREACT_IO", "thread")
        assert OpenAIChatModel("m", base_url=url).io == "thread"
        monkeypatch.setenv("RXREACT_IO", "loop")
        assert OpenAIChatModel("m", base_url=url).io == "loop"
        assert OpenAIChatModel("m", base_url=url, http_client=aclient).io == "loop"
        with pytest.raises(ConfigurationError, match="does not fit"):
            OpenAIChatModel("m", base_url=url, http_client=client, io="loop")
        with pytest.raises(ConfigurationError, match="must be"):
            OpenAIChatModel("m", base_url=url, io="fibers")  # type: ignore[arg-type]
        monkeypatch.setenv("RXREACT_IO", "fibers")
        with pytest.raises(ConfigurationError, match="RXREACT_IO"):
            OpenAIChatModel("m", base_url=url)
    finally:
        client.close()
        run_on_io_loop(aclient.aclose())


def test_waiting_for_the_loop_on_the_loop_is_refused() -> None:
    async def inside() -> None:
        with OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", io="loop") as model:
            with pytest.raises(RuntimeError, match="block the I/O loop"):
                model.complete(REQUEST)
            with pytest.raises(RuntimeError, match="would wait"):
                run_on_io_loop(asyncio.sleep(0))

    run_on_io_loop(inside())
