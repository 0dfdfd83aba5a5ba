"""Fencing on a RedisEventLog, against a real redis-server: once another log claimed a run,
its first owner (paused, not dead) writes nothing more to it: no event, no checkpoint, no end
marker, no meta or active update; its run is stopped, and its other runs go on. Also in real
processes: the owner is SIGSTOPped, the run claimed, the owner continued."""

from __future__ import annotations

import logging
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer

from rxreact import RedisEventLog
from rxreact.events import TextDelta
from rxreact.runs._entries import End, decode_entry
from rxreact.runs.redis._keys import Keys
from rxreact.runs.redis._writes import RunWriterToRedis

KEYS = Keys("rxreact:")
CHILD = Path(__file__).with_name("fence_child.py")


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[Any]:
    import redis

    with redis.Redis.from_url(redis_server.url) as client:
        client.flushdb()
        yield client


@pytest.fixture
def logs(redis_server: RedisServer, client: Any) -> Iterator[Callable[..., RedisEventLog]]:
    made: list[RedisEventLog] = []

    def make(**options: Any) -> RedisEventLog:
        made.append(RedisEventLog(redis_server.url, **options))
        return made[-1]

    yield make
    for log in made:
        log.close()


class Owned:
    """A run begun on a log, its writer, and whether it was cancelled."""

    def __init__(self, log: RedisEventLog, run_id: str, conversation_id: str = "conv") -> None:
        self.run_id = run_id
        self.cancelled = threading.Event()
        writer = log.begin(run_id, conversation_id, self.cancelled.set)
        assert isinstance(writer, RunWriterToRedis)
        self.writer = writer
        self.sent: list[bool] = []

    def write(self, *seqs: int) -> None:
        for seq in seqs:
            self.writer.append(TextDelta(round=1, delta=f"w{seq}", seq=seq))

    def checkpoint(self, body: bytes) -> None:
        self.writer.checkpoint(body, self.sent.append)


def stream(client: Any, run_id: str) -> list[int | str]:
    """The run's stream as its readers see it: each event's seq, then ``end``."""
    out: list[int | str] = []
    for entry_id, fields in client.xrange(KEYS.run(run_id)):
        for item in decode_entry(int(entry_id.split(b"-")[1]), fields):
            out.append("end" if isinstance(item, End) else item.seq)
    return out


def lose(client: Any, run_id: str) -> None:
    """What lost_after without a heartbeat does to a run: its meta key expires, and its due
    time in the running index passes."""
    client.delete(KEYS.meta(run_id))
    client.zadd(KEYS.running(0), {run_id: 0}, xx=True)


def claim(log: RedisEventLog, run_id: str) -> int:
    """Claim the lost run from ``log``; its new token."""
    claimed = log.claim_lost()
    assert [lost.run_id for lost in claimed] == [run_id]
    return claimed[0].token


def test_a_claimed_runs_first_owner_writes_nothing_more_and_is_stopped(
    logs: Callable[..., RedisEventLog], client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = logs(), logs()
    run = Owned(first, "r")
    run.write(1, 2)
    run.checkpoint(b"c0")
    assert first.flush()
    assert run.sent == [True]
    lose(client, "r")  # the first log was paused past lost_after...
    assert claim(second, "r") == 2  # ...and the second took the run over

    with caplog.at_level(logging.WARNING, logger="rxreact.runs.redis._writes"):
        run.write(3, 4)  # the first log goes on as if nothing happened
        run.checkpoint(b"c1")
        assert first.flush()
        assert run.cancelled.wait(10)  # its run is stopped...
        run.writer.end()  # ...and ends (here: cancelled) without ending the run in Redis
        assert first.flush()

    assert stream(client, "r") == [1, 2]  # no event, no end marker after the claim
    assert client.hkeys(KEYS.checkpoints("r")) == [b"0"]
    assert run.sent == [True, False]  # the step after that checkpoint never starts
    assert client.hmget(KEYS.owner("r"), ["owner", "token", "state"]) == [
        second.owner.encode(),
        b"2",
        b"running",  # not "ended" by the first owner
    ]
    assert client.get(KEYS.meta("r")) == b"running"
    assert client.zscore(KEYS.running(0), "r") is not None
    assert client.zscore(KEYS.active("conv"), "r") is not None
    fenced = [r for r in caplog.records if "has another owner now" in r.getMessage()]
    assert len(fenced) == 1  # once, however many writes were refused


def test_the_new_owner_writes_on_where_the_refused_one_stopped(
    logs: Callable[..., RedisEventLog], client: Any
) -> None:
    first, second = logs(), logs()
    run = Owned(first, "r")
    run.write(1, 2)
    assert first.flush()
    lose(client, "r")
    [lost] = second.claim_lost()
    resumed = second.resume(lost, lambda: None)
    run.write(3)  # refused: it would have taken seq 3 from the new owner
    assert first.flush()
    resumed.append(TextDelta(round=1, delta="new", seq=3))
    resumed.end()
    assert second.flush()
    assert stream(client, "r") == [1, 2, 3, "end"]
    assert client.hget(KEYS.owner("r"), "state") == b"ended"  # ended by its owner


def test_a_refused_run_leaves_the_other_runs_of_its_batch_written(
    logs: Callable[..., RedisEventLog], client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = logs(), logs()
    kept = Owned(first, "kept")
    Owned(first, "lost")
    assert first.flush()
    lose(client, "lost")
    claim(second, "lost")
    fences = {f.run_id: f for f in first._fences.values()}
    batch: list[tuple[Any, ...]] = [
        ("e", fences["lost"], TextDelta(round=1, delta="a", seq=1), None),
        ("e", fences["kept"], TextDelta(round=1, delta="b", seq=1), None),
        ("ckpt", fences["lost"], b"c", 0, 1, None),
        ("ckpt", fences["kept"], b"c", 0, 1, None),
    ]
    with caplog.at_level(logging.WARNING, logger="rxreact.runs.redis._writes"):
        sent = first._writes._send(batch)  # one pipeline, as a flush sends it
    assert sent.refused == [fences["lost"]] and sent.failed == []
    assert stream(client, "lost") == [] and stream(client, "kept") == [1]
    assert client.hkeys(KEYS.checkpoints("kept")) == [b"0"]
    assert not client.exists(KEYS.checkpoints("lost"))
    assert not caplog.records  # _send reports; the flush stops the run (tested above)
    assert not kept.cancelled.is_set()


def test_the_heartbeat_is_fenced_too(
    logs: Callable[..., RedisEventLog], client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # A run that writes nothing (it waits on a slow tool) is stopped at its next beat.
    first, second = logs(), logs()
    run = Owned(first, "r")
    idle = Owned(first, "idle")
    assert first.flush()
    lose(client, "r")
    claim(second, "r")
    client.pexpire(KEYS.meta("r"), 60_000)  # what the first owner's beat must not touch
    client.pexpire(KEYS.meta("idle"), 60_000)
    with caplog.at_level(logging.WARNING, logger="rxreact.runs.redis._writes"):
        first._heartbeat(client)
    assert run.cancelled.wait(10)
    assert not idle.cancelled.is_set()
    assert 50_000 < client.pttl(KEYS.meta("r")) <= 60_000  # not renewed by the refused beat
    assert client.pttl(KEYS.meta("idle")) <= first.lost_after * 1000  # renewed: lost_after
    assert any("has another owner now" in r.getMessage() for r in caplog.records)


def test_a_server_that_forgot_the_script_is_given_it_again(
    logs: Callable[..., RedisEventLog], client: Any
) -> None:
    log = logs()
    run = Owned(log, "r")
    run.write(1)
    assert log.flush()
    client.script_flush()  # as after a restart or a failover
    run.write(2)
    run.writer.end()
    assert log.flush()
    assert stream(client, "r") == [1, 2, "end"]
    assert not run.cancelled.is_set()


def test_a_lease_that_expired_does_not_refuse_its_owner(
    logs: Callable[..., RedisEventLog], client: Any
) -> None:
    # Nobody can claim a run without a lease, so its owner is still its only writer.
    log = logs()
    run = Owned(log, "r")
    client.delete(KEYS.owner("r"))
    run.write(1)
    run.writer.end()
    assert log.flush()
    assert stream(client, "r") == [1, "end"]


def test_a_paused_owner_process_is_refused_once_continued(
    redis_server: RedisServer, logs: Callable[..., RedisEventLog], client: Any
) -> None:
    owner = subprocess.Popen(
        [sys.executable, str(CHILD), redis_server.url, "0.6"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = Lines(owner)
        run_id = lines.next()
        owner.stdin.write("write 1\n")  # type: ignore[union-attr]
        owner.stdin.flush()  # type: ignore[union-attr]
        assert lines.next() == "written 1 True"
        owner.send_signal(signal.SIGSTOP)  # paused: no beats, no writes
        # Its heartbeat key lapsing (lost_after with no beat), now rather than waited for.
        assert client.exists(KEYS.meta(run_id)) == 1
        lose(client, run_id)
        claim(logs(), run_id)
        owner.stdin.write("write 2\nend\n")  # type: ignore[union-attr]
        owner.stdin.flush()  # type: ignore[union-attr]
        owner.send_signal(signal.SIGCONT)
        seen = {lines.next() for _ in range(3)}
        assert seen == {"cancelled", "written 2 False", "ended"}
        assert stream(client, run_id) == [1]
        assert client.hkeys(KEYS.checkpoints(run_id)) == [b"0"]
        assert client.hget(KEYS.owner(run_id), "state") == b"running"
    finally:
        owner.send_signal(signal.SIGCONT)
        owner.kill()
        owner.communicate(timeout=10)


class Lines:
    """A child's stdout, line by line, each within a timeout (read by a thread of its own)."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self._lines: queue.Queue[str] = queue.Queue()
        stdout = process.stdout
        threading.Thread(target=lambda: [self._lines.put(x) for x in stdout], daemon=True).start()

    def next(self, timeout: float = 20.0) -> str:
        try:
            return self._lines.get(timeout=timeout).strip()
        except queue.Empty:
            raise AssertionError("the child said nothing") from None
