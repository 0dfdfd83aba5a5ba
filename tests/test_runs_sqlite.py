"""SQLiteEventLog on real files and real OS processes: following, resuming, errors, cancel,
liveness and retention, as RedisEventLog does them (tests/test_runs_redis.py)."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_runs import ANSWER, Collector, Gate, gated_script, serve
from test_runs_redis import child, last_json

from rxreact import (
    RateLimitError,
    ReactAgent,
    RunCancelledError,
    RunError,
    RunLostError,
    RunNotFoundError,
    SQLiteEventLog,
    follow,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Hang, HTTPErrorReply, text_reply
from rxreact.testing import ChaosScheduler

__all__ = ["serve"]  # the fixture, shared with test_runs


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "runs.db")


@pytest.fixture
def logs(db: str) -> Iterator[Any]:
    """Make SQLiteEventLogs on one file (closed at the end)."""
    made: list[SQLiteEventLog] = []

    def make(**options: Any) -> SQLiteEventLog:
        log = SQLiteEventLog(db, **options)
        made.append(log)
        return log

    yield make
    for log in made:
        log.close()


def test_a_follower_in_another_process_reads_what_the_owner_sees(
    serve: Any, logs: Any, db: str
) -> None:
    server, model = serve(gated_script())
    gate = Gate()
    run = ReactAgent(model, [gate.tool], event_log=logs()).start("q")
    own = Collector(run.events())
    assert gate.reached.wait(10)
    follower = child("follow", db, run.id, "0")
    assert follower.stdout is not None and follower.stdout.readline().strip() == "ready"
    gate.opened.set()  # the rest of the run is followed live

    result = last_json(follower)

    assert own.wait().text == result["text"] == ANSWER
    assert result["seqs"] == own.seqs == list(range(1, len(own.seqs) + 1))
    assert "error" not in result
    assert len(server.requests) == 2


def test_follow_and_resume_from_another_log(serve: Any, logs: Any) -> None:
    _, model = serve([text_reply(ANSWER, size=3)])
    owner, reader = logs(), logs()  # reader has its own connections: it reads the file
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


def test_active_run_tracks_the_run_and_retention_deletes_it(serve: Any, logs: Any, db: str) -> None:
    _, model = serve(gated_script())
    gate = Gate()
    owner, other = logs(ttl=0.05, lost_after=0.3), logs()
    run = ReactAgent(model, [gate.tool], event_log=owner).start("q", conversation_id="c")
    assert other.active_run("c") == run.id
    assert gate.reached.wait(10)
    gate.opened.set()
    run.result(timeout=10)
    assert owner.flush()
    assert other.active_run("c") is None
    with sqlite3.connect(db) as check:
        assert check.execute("SELECT state FROM runs").fetchall() == [("ended",)]
        done = threading.Event()
        for _ in range(400):  # the owner's next heartbeat (every 0.1 s) deletes the run
            if check.execute("SELECT COUNT(*) FROM entries").fetchone() == (0,):
                done.set()
                break
            done.wait(0.025)
        assert done.is_set()
        assert check.execute("SELECT COUNT(*) FROM runs").fetchone() == (0,)


def test_cancel_from_another_process_stops_the_owner(serve: Any, logs: Any, db: str) -> None:
    server, _ = serve([[*text_reply("partial")[:2], Hang()]])
    reader = logs()
    owner = child("own", db, server.base_url, "30")
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


def test_a_killed_owner_is_reported_lost_after_the_takeover_timeout(
    serve: Any, logs: Any, db: str
) -> None:
    server, _ = serve([[*text_reply("partial")[:2], Hang()]])
    reader = logs(lost_after=1.0, takeover_timeout=0.5)
    owner = child("own", db, server.base_url, "1")
    assert owner.stdout is not None
    run_id = owner.stdout.readline().strip()
    streaming = threading.Event()
    watcher = Collector(follow(run_id, reader))
    follow(run_id, reader).subscribe(lambda e: e.type == "text_delta" and streaming.set())
    assert streaming.wait(10)  # the run has written events: killed mid-run, not before it
    owner.kill()  # SIGKILL: no end marker, no more heartbeats
    owner.communicate(timeout=10)

    assert isinstance(watcher.wait().error, RunLostError)  # after lost_after + takeover_timeout
    assert reader.active_run("shared") is None
    with sqlite3.connect(db) as check:  # nothing was written for it after the kill
        assert check.execute("SELECT state FROM runs").fetchall() == [("running",)]


def test_a_slow_follower_never_holds_the_run_back(serve: Any, logs: Any) -> None:
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


def test_a_file_that_is_not_an_event_log_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as made:
        made.execute("CREATE TABLE t (x)")
    with pytest.raises(RunError, match="not an rxreact event log"):
        SQLiteEventLog(other)
    with pytest.raises(RunError, match="does not exist"):
        SQLiteEventLog(tmp_path / "missing" / "runs.db")
