"""RedisEventLog against a real redis-server and real OS processes: following, resuming,
errors, cancel and liveness across processes; keys and expiry."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import finish
from redis_server import RedisServer
from test_runs import ANSWER, Collector, Gate, gated_script, serve

from rxreact import (
    RateLimitError,
    ReactAgent,
    RedisEventLog,
    RunCancelledError,
    RunLostError,
    RunNotFoundError,
    follow,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Hang, HTTPErrorReply, text_reply
from rxreact.testing import ChaosScheduler

__all__ = ["serve"]  # the fixture, shared with test_runs

CHILD = Path(__file__).with_name("runs_child.py")


@pytest.fixture
def logs(redis_server: RedisServer) -> Iterator[Any]:
    """Make RedisEventLogs on the server (closed at the end); the database starts empty."""
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushdb()
    made: list[RedisEventLog] = []

    def make(**options: Any) -> RedisEventLog:
        log = RedisEventLog(redis_server.url, **options)
        made.append(log)
        return log

    yield make
    for log in made:
        log.close()


def child(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def last_json(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = finish(process, timeout=30)  # SIGKILLed past it: no process or pipe outlives us
    lines = [line for line in out.splitlines() if line.startswith("{")]
    assert lines, f"child printed no result: {out!r} {err[-2000:]}"
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def test_a_follower_in_another_process_reads_what_the_owner_sees(
    serve: Any, logs: Any, redis_server: RedisServer
) -> None:
    server, model = serve(gated_script())
    gate = Gate()
    run = ReactAgent(model, [gate.tool], event_log=logs()).start("q")
    own = Collector(run.events())
    assert gate.reached.wait(10)
    follower = child("follow", redis_server.url, run.id, "0")
    assert follower.stdout is not None and follower.stdout.readline().strip() == "ready"
    gate.opened.set()  # the rest of the run is followed live

    result = last_json(follower)

    assert own.wait().text == result["text"] == ANSWER
    assert result["seqs"] == own.seqs == list(range(1, len(own.seqs) + 1))
    assert "error" not in result
    assert len(server.requests) == 2


def test_follow_and_resume_through_redis_from_another_log(serve: Any, logs: Any) -> None:
    _, model = serve([text_reply(ANSWER, size=3)])
    owner, reader = logs(), logs()  # reader is another client: it reads Redis, not memory
    run = ReactAgent(model, event_log=owner).start("q", conversation_id="c")
    run.result(timeout=10)
    full = Collector(follow(run.id, reader)).wait()
    assert full.text == ANSWER and full.error is None
    assert full.events == Collector(run.events()).wait().events
    for k in (1, 7, len(full.events) - 1, len(full.events)):
        assert Collector(follow(run.id, reader, after=k)).wait().events == full.events[k:]
    assert isinstance(Collector(follow("nope", reader)).wait().error, RunNotFoundError)


def test_errors_cross_as_the_same_type(serve: Any, logs: Any) -> None:
    _, model = serve([HTTPErrorReply(429, "slow down", {"retry-after": "7"})])
    run = ReactAgent(model, event_log=logs()).start("q")
    with pytest.raises(RateLimitError):
        run.result(timeout=10)
    error = Collector(follow(run.id, logs())).wait().error
    assert isinstance(error, RateLimitError)
    assert (error.status_code, error.retry_after) == (429, 7.0)
    assert "slow down" in str(error)


def test_keys_expire_after_the_run_and_active_run_tracks_it(
    serve: Any, logs: Any, redis_server: RedisServer
) -> None:
    import redis

    _, model = serve(gated_script())
    gate = Gate()
    owner, other = logs(ttl=60, prefix="t:"), logs(prefix="t:")
    run = ReactAgent(model, [gate.tool], event_log=owner).start("q", conversation_id="c")
    assert other.active_run("c") == run.id
    assert gate.reached.wait(10)
    gate.opened.set()
    run.result(timeout=10)
    Collector(follow(run.id, other)).wait()  # everything written

    assert other.active_run("c") is None
    with redis.Redis.from_url(redis_server.url) as client:
        keys = {k.decode() for k in client.keys("t:*")}
        assert {f"t:run:{run.id}", f"t:run:{run.id}:meta"} <= keys
        assert 0 < client.pttl(f"t:run:{run.id}") <= 60_000


def test_cancel_from_another_process_stops_the_owner(
    serve: Any, logs: Any, redis_server: RedisServer
) -> None:
    server, _ = serve([[*text_reply("partial")[:2], Hang()]])
    reader = logs()
    owner = child("own", redis_server.url, server.base_url, "30")
    assert owner.stdout is not None
    run_id = owner.stdout.readline().strip()
    streaming = threading.Event()
    watcher = Collector(follow(run_id, reader))
    follow(run_id, reader).subscribe(lambda e: e.type == "text_delta" and streaming.set())
    assert streaming.wait(10)  # the owner's HTTP stream is open, now silent
    assert reader.active_run("shared") == run_id

    reader.request_cancel(run_id)

    assert last_json(owner) == {"outcome": "RunCancelledError"}
    assert isinstance(watcher.wait().error, RunCancelledError)
    assert server.wait_for_disconnects(1, timeout=10)  # the owner closed its HTTP stream
    assert reader.active_run("shared") is None


def test_a_killed_owner_is_reported_lost(serve: Any, logs: Any, redis_server: RedisServer) -> None:
    server, _ = serve([[*text_reply("partial")[:2], Hang()]])
    reader = logs(lost_after=1.0, takeover_timeout=0.5)
    owner = child("own", redis_server.url, server.base_url, "1")
    assert owner.stdout is not None
    run_id = owner.stdout.readline().strip()
    streaming = threading.Event()
    watcher = Collector(follow(run_id, reader))
    follow(run_id, reader).subscribe(lambda e: e.type == "text_delta" and streaming.set())
    assert streaming.wait(10)  # the run has written events: killed mid-run, not before it
    owner.kill()  # SIGKILL: no end marker, no more heartbeats
    owner.communicate(timeout=10)

    assert isinstance(watcher.wait().error, RunLostError)  # within about lost_after
    assert reader.active_run("shared") is None


def test_a_slow_follower_through_redis_never_holds_the_run_back(serve: Any, logs: Any) -> None:
    _, model = serve([text_reply("w " * 3000, size=2)])
    owner, reader = logs(), logs()
    release = threading.Event()
    got: list[int] = []
    done = threading.Event()

    def slow(event: Any) -> None:
        got.append(event.seq)
        if len(got) == 1:
            assert release.wait(10)

    run = ReactAgent(model, event_log=owner).start("q")
    follow(run.id, reader).subscribe(slow, on_completed=done.set)
    assert run.result(timeout=10).answer == "w " * 3000  # while the follower is stuck
    release.set()
    assert done.wait(10)
    assert got == list(range(1, len(got) + 1)) and len(got) > 3000


def test_many_followers_of_many_runs_through_one_reader(logs: Any) -> None:
    answer = "w " * 200
    owner = logs()
    reader = logs(scheduler=ChaosScheduler(8, seed=5))  # deliveries preempted at random
    agent = ReactAgent(ScriptedModel(lambda _: text_reply(answer, size=2)), event_log=owner)
    runs = [agent.start("q") for _ in range(10)]
    followers = [(run, Collector(follow(run.id, reader))) for run in runs for _ in range(5)]
    for run, collector in followers:
        assert collector.wait().error is None
        assert collector.text == answer == run.result(timeout=10).answer
        assert collector.seqs == list(range(1, len(collector.seqs) + 1))


def test_a_run_seen_running_that_vanishes_before_its_first_event_is_lost_not_unknown(
    logs: Any, redis_server: RedisServer
) -> None:
    # An owner that died after announcing its run but before writing any event: what a
    # follower has seen running is lost (RunLostError), not a run never heard of.
    import redis

    reader = logs(lost_after=1.5, takeover_timeout=0.5)  # the hub looks every 0.5 s
    meta = "rxreact:run:early:meta"  # the owner's announcement (RedisEventLog's key layout)
    with redis.Redis.from_url(redis_server.url) as client:
        client.set(meta, "running", px=30_000)
        watcher = Collector(follow("early", reader))
        checked = threading.Event()
        for _ in range(2000):  # until the hub's first look at the run (it is running then)
            if any(f.seen_running for f in list(reader._hub.reader(0)._followers)):
                checked.set()
                break
            checked.wait(0.005)
        assert checked.is_set()
        client.delete(meta)  # the owner is gone: no heartbeat, no event, no end
    assert isinstance(watcher.wait().error, RunLostError)
