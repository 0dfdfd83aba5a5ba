"""Delivery at scale: posted hand-offs on rxreact's pool, isolation from a blocking
subscriber in every I/O mode, and the default client's small connection pools.

(Nothing here times anything: the speed is the benchmark's; these check what must hold.)
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from test_aio import Collect

from rxreact import ReactAgent
from rxreact.events import FinalAnswer, TextDelta
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.http._clients import Shards
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.scripted.replies import text_reply
from rxreact.operators import deliver_on
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import MockOpenAIServer

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


# -- ElasticScheduler.post ------------------------------------------------------------------


def test_posted_actions_all_run_in_order_of_posting_on_one_worker() -> None:
    pool = ElasticScheduler(4, name="post")
    ran: list[int] = []
    threads: set[str] = set()
    done = threading.Event()
    gate = threading.Event()

    def first() -> None:
        gate.wait(5)  # the rest are posted while a worker runs: none of them wakes another
        threads.add(threading.current_thread().name)

    def action(i: int) -> None:
        ran.append(i)
        threads.add(threading.current_thread().name)
        if i == 99:
            done.set()

    pool.post(first)
    for i in range(100):
        pool.post(lambda i=i: action(i))  # type: ignore[misc]
    gate.set()
    assert done.wait(5)
    assert ran == list(range(100))
    pool.shutdown()


def test_a_blocked_posted_action_does_not_hold_back_the_others() -> None:
    pool = ElasticScheduler(2, name="stall")
    release, other_ran = threading.Event(), threading.Event()
    try:
        pool.post(lambda: release.wait(10))
        pool.post(other_ran.set)  # a worker is running: posted without a wake-up ...
        assert other_ran.wait(5)  # ... yet the stall watch hands it to another worker
    finally:
        release.set()
        pool.shutdown()


def test_submit_and_post_share_the_queue_and_shutdown_refuses_both() -> None:
    pool = ElasticScheduler(1, name="mixed")
    done = threading.Event()
    pool.post(lambda: None)
    pool.schedule(lambda _s, _st: done.set())
    assert done.wait(5)
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.post(lambda: None)


# -- isolation in both I/O modes ------------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("io", ["thread", "loop"])
def test_a_blocking_subscriber_does_not_stall_other_streams(io: str) -> None:
    pool = ElasticScheduler(4, name=f"iso-{io}")
    release, blocked = threading.Event(), threading.Event()
    slow = Collect()

    def slow_next(item: Any) -> None:
        blocked.set()
        release.wait(10)
        slow.on_next(item)

    script = [text_reply("slow " * 50, size=1), text_reply("quick")]
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel("m", base_url=server.base_url, io=io) as model,  # type: ignore[arg-type]
    ):
        held = (
            model.stream(REQUEST)
            .pipe(deliver_on(pool, max_buffer=8))
            .subscribe(slow_next, slow.on_error, slow.on_completed)
        )
        try:
            assert blocked.wait(10)
            other = Collect()
            model.stream(REQUEST).pipe(deliver_on(pool)).subscribe(
                other.on_next, other.on_error, other.on_completed
            )
            assert other.done.wait(10), "another stream stalled behind a blocked subscriber"
            assert other.error is None
            assert assemble(other.items).content == "quick"
            assert not slow.done.is_set()
            release.set()
            assert slow.done.wait(10)
            assert slow.error is None
            assert assemble(slow.items).content == "slow " * 50
        finally:
            release.set()
            held.dispose()
    pool.shutdown()


@pytest.mark.integration
@pytest.mark.parametrize("io", ["thread", "loop"])
def test_an_agent_run_with_a_blocking_subscriber_does_not_stall_other_runs(io: str) -> None:
    release, blocked = threading.Event(), threading.Event()
    with (
        MockOpenAIServer([text_reply("one two three", size=4), text_reply("other")]) as server,
        OpenAIChatModel("m", base_url=server.base_url, io=io) as model,  # type: ignore[arg-type]
    ):
        agent = ReactAgent(model)  # the default, shared agent pool

        def blocking(event: Any) -> None:
            if isinstance(event, TextDelta):
                blocked.set()
                release.wait(10)

        stuck = Collect()
        subscription = agent.stream("first").subscribe(blocking, stuck.on_error, stuck.on_completed)
        try:
            assert blocked.wait(10)
            other = Collect()
            agent.stream("second").subscribe(other.on_next, other.on_error, other.on_completed)
            assert other.done.wait(10), "a run stalled behind another run's blocked subscriber"
            assert other.error is None
            final = [e for e in other.items if isinstance(e, FinalAnswer)]
            assert [f.text for f in final] == ["other"]
            release.set()
            assert stuck.done.wait(10)
            assert stuck.error is None
        finally:
            release.set()
            subscription.dispose()


# -- the default client's pools -------------------------------------------------------------


def test_shards_fill_one_client_before_the_next_and_reuse_the_latest_freed() -> None:
    made: list[int] = []

    def make(limits: Any, _ssl: Any) -> Any:
        made.append(limits.max_connections)
        return object()

    shards: Shards[Any] = Shards(make, size=2, cap=100)
    a1, a2, b1 = shards.acquire(), shards.acquire(), shards.acquire()
    assert a1 is a2 and b1 is not a1
    assert made == [2, 2] and len(shards) == 2
    shards.release(a1)  # a is freed last: the next request goes to it, where a connection idles
    assert shards.acquire() is a1
    assert shards.acquire() is b1
    assert len(shards) == 2
    assert [s.load for s in (a1, b1)] == [2, 2]


def test_shards_past_the_cap_share_the_least_loaded_client() -> None:
    shards: Shards[Any] = Shards(lambda _l, _s: object(), size=2, cap=4)
    taken = [shards.acquire() for _ in range(4)]
    assert len(shards) == 2
    shards.release(taken[0])
    shards.release(taken[3])
    extra = [shards.acquire() for _ in range(4)]  # two with room, then two past the cap
    assert len(shards) == 2
    assert sorted(s.load for s in {id(s): s for s in extra}.values()) == [3, 3]
    for shard in taken[1:3] + extra:
        shards.release(shard)
    assert shards.acquire().load == 1


@pytest.mark.integration
@pytest.mark.parametrize("io", ["thread", "loop"])
def test_the_default_client_keeps_one_connection_for_sequential_requests(io: str) -> None:
    script = [text_reply(word) for word in ("a", "b", "c")]
    with (
        MockOpenAIServer(script) as server,
        OpenAIChatModel("m", base_url=server.base_url, io=io) as model,  # type: ignore[arg-type]
    ):
        for word in ("a", "b", "c"):
            collect = Collect()
            model.stream(REQUEST).subscribe(collect.on_next, collect.on_error, collect.on_completed)
            assert collect.done.wait(10) and collect.error is None
            assert assemble(collect.items).content == word
    assert server.connections == 1
