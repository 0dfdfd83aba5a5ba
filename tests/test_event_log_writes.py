"""RedisEventLog's writes when Redis goes away: a batch it did not take is sent again once it
is back, without duplicates; after every retry wait, dropped with a warning. Against a real
redis-server that is really stopped and started again on its port."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from redis_server import RedisServer, running_redis_server

from rxreact.events import TextDelta
from rxreact.runs._entries import decode_entry
from rxreact.runs._write_queue import Fence
from rxreact.runs.redis._keys import Keys
from rxreact.runs.redis._writes import RedisWriteQueue

KEYS = Keys("t:")
RUNS: dict[str, Fence] = {}


def fence(run: str) -> Fence:
    """The run's fence (no lease in Redis: nobody else can claim the run, so it writes)."""
    return RUNS.setdefault(run, Fence(run, "me", 1, lambda: None))


@pytest.fixture
def server() -> Iterator[RedisServer]:
    """A server of this test's own: the tests stop and restart it."""
    with running_redis_server() as server:
        yield server


@pytest.fixture
def client(server: RedisServer) -> Iterator[Any]:
    import redis

    with redis.Redis.from_url(server.url, socket_connect_timeout=1) as client:
        yield client


def queue_on(client: Any, *waits: float) -> RedisWriteQueue:
    import redis

    queue = RedisWriteQueue(client, KEYS, 60_000, 60_000, redis.RedisError)
    queue.retry_waits = waits
    return queue


def put_events(queue: RedisWriteQueue, run: str, *seqs: int) -> None:
    for seq in seqs:
        queue.put(("e", fence(run), TextDelta(round=1, delta=f"w{seq}", seq=seq)))


def stored(client: Any, run: str) -> list[tuple[int, list[str]]]:
    """Each entry of the run's stream: its seq and the deltas in it."""
    out = []
    for entry_id, fields in client.xrange(KEYS.run(run)):
        seq = int(entry_id.split(b"-")[1])
        out.append((seq, [e.delta for e in decode_entry(seq, fields) if type(e) is TextDelta]))
    return out


def until(condition: Callable[[], bool]) -> bool:
    poll = threading.Event()
    for _ in range(2000):
        if condition():
            return True
        poll.wait(0.005)
    return False


def test_a_batch_redis_did_not_take_is_sent_again_once_it_is_back(
    server: RedisServer, client: Any
) -> None:
    queue = queue_on(client, *[0.05] * 200)  # up to 10 s of retries
    server.stop()
    put_events(queue, "r", 1, 2, 3)
    assert until(lambda: queue._tries >= 1)  # the first send failed: a retry is waiting
    assert not queue.wait_sent(0)  # ... and it still counts as unsent
    assert server.restart()
    assert queue.wait_sent(10)
    assert stored(client, "r") == [(3, ["w1", "w2", "w3"])]
    put_events(queue, "r", 4)  # the queue goes on as before
    assert queue.wait_sent(10)
    assert stored(client, "r") == [(3, ["w1", "w2", "w3"]), (4, ["w4"])]


def test_a_batch_sent_again_after_it_did_arrive_adds_no_entry_twice(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    queue = queue_on(client, 0.05)
    run = fence("r")
    batch: list[tuple[Any, ...]] = [
        ("e", run, TextDelta(round=1, delta=f"w{seq}", seq=seq), None) for seq in (1, 2)
    ]
    batch.append(("end", run, None, 3, None, None))
    queue._send(batch)  # it arrived, but say the reply was lost: a retry is due
    with queue._lock:
        queue._failed, queue._tries, queue._flushing = batch, 1, True
    with caplog.at_level(logging.WARNING, logger="rxreact.runs.redis._writes"):
        queue._flush(queue.scheduler)
    assert [seq for seq, _ in stored(client, "r")] == [2, 3]  # the events, then the end marker
    assert stored(client, "r")[0] == (2, ["w1", "w2"])
    assert not caplog.records  # the refused duplicates are not failures
    assert queue.wait_sent(0)


def test_once_every_wait_is_spent_the_batch_is_dropped_with_a_warning(
    server: RedisServer, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    queue = queue_on(client, 0.01, 0.01)
    server.stop()
    with caplog.at_level(logging.WARNING, logger="rxreact.runs.redis._writes"):
        put_events(queue, "r", 1)
        assert queue.wait_sent(30)
    assert any("writes failed" in r.getMessage() for r in caplog.records)
    assert server.restart()
    put_events(queue, "r", 2)  # what comes later is sent
    assert queue.wait_sent(10)
    assert stored(client, "r") == [(2, ["w2"])]
