"""Admission to the I/O loop: while the loop runs late, new requests wait in order, unsent.

The gate's rule is tested on a loop of the test's own, fed measured lateness directly; its use
by loop-mode requests against the loopback mock, with the watchdog in virtual time (a request
waiting for admission has no timer running: it has sent nothing).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from busy_pool import ClockLoop, held
from reactivex import operators as ops
from reactivex.testing import TestScheduler

from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.chunks import ChatChunk
from rxreact.model.http._admission import BATCH, LATE_S, Admission
from rxreact.model.http._aio import admission, io_loop, run_on_io_loop
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.scripted.replies import Hang, text_reply
from rxreact.operators import deliver_on
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import MockOpenAIServer

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def attempt(gate: Admission, order: list[Any], name: Any) -> None:
    """An attempt that notes when it was let in."""
    await gate.enter()
    order.append(name)


def test_on_time_and_nobody_waiting_an_attempt_starts_at_once() -> None:
    async def main() -> tuple[int, int]:
        gate = Admission(asyncio.get_running_loop())
        await gate.enter()
        return gate.active, gate.waiting

    assert run(main()) == (1, 0)


def test_while_late_attempts_wait_and_are_let_in_first_come_first_served() -> None:
    async def main() -> list[int]:
        gate = Admission(asyncio.get_running_loop())
        gate.lateness(LATE_S)  # the probe found the loop late
        order: list[int] = []
        tasks = [asyncio.create_task(attempt(gate, order, n)) for n in range(3)]
        await asyncio.sleep(0)  # one pass: every task is in the line
        assert (gate.waiting, order) == (3, [])
        gate.lateness(LATE_S / 2)  # still a little late, but under the limit
        await asyncio.gather(*tasks)
        assert gate.active == 3
        return order

    assert run(main()) == [0, 1, 2]


def test_a_newcomer_queues_behind_those_waiting_even_when_the_loop_is_on_time() -> None:
    async def main() -> list[str]:
        gate = Admission(asyncio.get_running_loop())
        gate.lateness(1.0)
        order: list[str] = []
        first = asyncio.create_task(attempt(gate, order, "first"))
        await asyncio.sleep(0)
        gate._late = False  # on time again, but "first" has not been let in yet
        second = asyncio.create_task(attempt(gate, order, "second"))
        await asyncio.sleep(0)
        assert gate.waiting == 2
        gate.lateness(0.0)
        await asyncio.gather(first, second)
        return order

    assert run(main()) == ["first", "second"]


def test_a_backlog_is_let_in_a_batch_per_probe() -> None:
    async def main() -> list[int]:
        gate = Admission(asyncio.get_running_loop())
        gate.lateness(1.0)
        tasks = [asyncio.create_task(gate.enter()) for _ in range(BATCH + 5)]
        await asyncio.sleep(0)
        admitted = []
        for _ in range(2):
            gate.lateness(0.0)
            await asyncio.sleep(0)
            admitted.append(sum(task.done() for task in tasks))
        return admitted

    assert run(main()) == [BATCH, BATCH + 5]


def test_a_cancelled_waiter_leaves_the_line_without_taking_a_place() -> None:
    async def main() -> tuple[int, list[int]]:
        gate = Admission(asyncio.get_running_loop())
        gate.lateness(1.0)
        order: list[int] = []
        tasks = [asyncio.create_task(attempt(gate, order, n)) for n in range(3)]
        await asyncio.sleep(0)
        tasks[1].cancel()
        gate.lateness(0.0)
        await asyncio.gather(*tasks, return_exceptions=True)
        return gate.active, order

    assert run(main()) == (2, [0, 2])


def test_the_probe_measures_lateness_and_stops_when_nothing_is_left_to_measure() -> None:
    async def main() -> list[bool]:
        loop = asyncio.get_running_loop()
        gate = Admission(loop)
        await gate.enter()  # starts the probe
        seen = [gate._probing]
        gate._probe(loop.time() - 1.0)  # ran a second late: late, and an attempt is active
        seen += [gate._late, gate._probing]
        gate.leave()
        gate._probe(loop.time())  # on time, nothing active, nobody waiting: it stops
        seen += [gate._late, gate._probing]
        return seen

    assert run(main()) == [True, True, True, False, False]


def test_the_probe_also_waits_for_the_pools_the_loop_hands_chunks_to() -> None:
    # The loop itself on time, the agent's pool seconds behind it: new attempts wait all the
    # same (their chunks would only join that pool's queue), until the pool catches up.
    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()
        behind = [2.0]
        gate = Admission(loop, behind=lambda: behind[0])
        await gate.enter()  # an attempt already running
        gate._probe(loop.time())  # the loop on time, its pool 2 s behind
        order: list[str] = []
        newcomer = asyncio.create_task(attempt(gate, order, "new"))
        await asyncio.sleep(0)
        seen: list[Any] = [gate._late, gate.waiting, list(order)]
        behind[0] = 0.0
        gate._probe(loop.time())  # caught up: the line is let in
        await newcomer
        seen += [gate._late, order]
        return seen

    assert run(main()) == [True, 1, [], False, ["new"]]


def test_by_default_the_probe_asks_how_far_the_loops_pools_are_behind() -> None:
    scheduler = ElasticScheduler(1, name="slow-consumer")
    loop = ClockLoop()
    try:
        with held(scheduler):
            gate = Admission(loop)
            scheduler.post(lambda: None, loop)  # handed over from the loop; waits behind `held`
            loop.now += 2 * LATE_S
            gate._probe(loop.now)  # the loop itself on time, the hand-off waiting 2 * LATE_S
            assert gate._late
    finally:
        scheduler.shutdown()
        loop.close()


# -- loop-mode requests through the gate ----------------------------------------------------


@contextmanager
def held_gate() -> Iterator[Admission]:
    """The I/O loop's gate, held shut (every probe finds the loop late) until the block ends."""
    gate = admission()

    async def shut() -> None:
        gate.late_s = -1.0
        gate.lateness(0.0)

    run_on_io_loop(shut())
    try:
        yield gate
    finally:
        gate.late_s = LATE_S  # the next probe lets the line in


def wait_until_waiting(gate: Admission, count: int) -> bool:
    poll = threading.Event()
    for _ in range(2000):
        if gate.waiting >= count:
            return True
        poll.wait(0.005)
    return False


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer([text_reply("hello there")]) as server:
        yield server


def test_a_request_waiting_for_admission_sends_nothing_and_runs_no_watchdog(
    server: MockOpenAIServer,
) -> None:
    scheduler = TestScheduler()  # the watchdog's clock: only we move it
    done = threading.Event()
    chunks: list[ChatChunk] = []
    errors: list[Exception] = []
    with OpenAIChatModel(
        "m", base_url=server.base_url, api_key="k", io="loop", first_chunk_timeout=1.0
    ) as model:
        io_loop()
        with held_gate() as gate:

            def failed(error: Exception) -> None:
                errors.append(error)
                done.set()

            model.stream(REQUEST).subscribe(chunks.append, failed, done.set, scheduler=scheduler)
            assert wait_until_waiting(gate, 1)
            scheduler.advance_by(60.0)  # far past the first-chunk limit: no timer was armed
            assert server.requests == []
        assert done.wait(10)
    assert errors == []
    assert "".join(c.text or "" for c in chunks) == "hello there"
    assert len(server.requests) == 1


def test_disposing_a_request_waiting_for_admission_takes_it_out_unsent(
    server: MockOpenAIServer,
) -> None:
    with OpenAIChatModel("m", base_url=server.base_url, api_key="k", io="loop") as model:
        io_loop()
        with held_gate() as gate:
            subscription = model.stream(REQUEST).subscribe(lambda _: None)
            assert wait_until_waiting(gate, 1)
            subscription.dispose()

        async def line() -> tuple[int, int]:
            gate.lateness(0.0)  # passes the cancelled waiter over
            return gate.waiting, gate.active

        assert run_on_io_loop(line()) == (0, 0)
        # a request sent after it shows the server has seen nothing before
        later = model.stream(REQUEST).pipe(ops.to_list()).run()
    assert "".join(c.text or "" for c in later) == "hello there"
    assert len(server.requests) == 1


def test_a_request_waits_while_the_pool_its_loop_feeds_is_behind() -> None:
    # End to end on the I/O loop: a stream's chunks wait in a pool whose only worker is busy;
    # a new request waits for admission, unsent, until the pool has caught up.
    pool = ElasticScheduler(1, name="held-agent-pool")
    first = [ChatChunk(role="assistant"), ChatChunk(text="a"), Hang()]
    with (
        MockOpenAIServer([first, text_reply("hello there")]) as server,
        OpenAIChatModel("m", base_url=server.base_url, api_key="k", io="loop") as model,
    ):
        gate = admission()
        try:
            with held(pool) as release:
                streaming = model.stream(REQUEST).pipe(deliver_on(pool)).subscribe(lambda _: None)
                assert server.wait_for_requests(1)
                poll = threading.Event()
                for _ in range(2000):  # until a probe saw the hand-offs wait LATE_S
                    if gate._late:
                        break
                    poll.wait(0.005)
                assert gate._late
                later = model.stream(REQUEST).pipe(ops.to_list()).run
                answers: list[Any] = []
                waiter = threading.Thread(target=lambda: answers.append(later()), daemon=True)
                waiter.start()
                assert wait_until_waiting(gate, 1)
                assert len(server.requests) == 1  # the second request was not sent
                release.set()  # the pool catches up: the next probe lets it in
                waiter.join(10)
            assert "".join(c.text or "" for c in answers[0]) == "hello there"
            assert len(server.requests) == 2
            streaming.dispose()
        finally:
            pool.shutdown()
