"""The shared logs' readers never die: garbage written straight into the real SQLite file and
redis-server (entries of every wrong shape, cancels and decisions of other shapes, a key of
another type) ends the followers of those runs with ``RunError``, while other runs on the same
log go on and finish, replays work, a cancel and a decision made through another log object
are applied by the owner's reader, and both readers keep beating."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_runs import ANSWER, Collector, Gate

from rxreact import (
    AgentError,
    ReactAgent,
    RedisEventLog,
    RunCancelledError,
    RunError,
    SQLiteEventLog,
    follow,
    tool,
)
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.runs.redis._keys import Keys

GOOD = b'[{"round":1,"seq":1,"type":"text_delta","delta":"fine so far"}]'

# Each garbage run: its entries as (kind, body). The first decodes; the last is garbage.
ENTRIES: dict[str, list[tuple[str, Any]]] = {
    "end-not-object": [("end", b"[1, 2]")],
    "end-a-string": [("end", b'"done"')],
    "error-not-a-dict": [("end", b'{"error": "boom"}')],
    "error-a-list": [("end", b'{"error": [1]}')],
    "unknown-kind": [("what", b"{}")],
    "truncated-events": [("e", b'[{"type": "text_del')],
    "truncated-end": [("end", b'{"error": {"type": "RunE')],
    "events-not-a-list": [("e", b'{"type": "text_delta"}')],
    "wrong-field-types": [("e", b'[{"type": "text_delta", "seq": "one", "delta": 5}]')],
    "unknown-event": [("e", b'[{"type": "no_such_event", "seq": 1}]')],
    "binary-events": [("e", b"\xff\xfe\x00\x81junk")],
    "binary-end": [("end", b"\x80\x81\x82")],
    "good-then-garbage": [("e", GOOD), ("end", b"[]")],
}


class RedisPlace:
    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)
        self.client.flushdb()
        self.keys = Keys("rxreact:")
        self.url = url

    def log(self, **options: Any) -> RedisEventLog:
        return RedisEventLog(self.url, **options)

    def write_runs(self) -> None:
        for run_id, entries in ENTRIES.items():
            self.client.set(self.keys.meta(run_id), "running", px=600_000)
            for seq, (kind, body) in enumerate(entries, 1):
                self.client.xadd(self.keys.run(run_id), {kind: body}, id=f"0-{seq}")
        self.client.set(self.keys.run("a-string-key"), "not a stream")  # WRONGTYPE for XREAD
        self.client.set(self.keys.meta("a-string-key"), "running", px=600_000)

    def write_requests(self) -> None:
        """Cancels and decisions of other shapes, read by every owner's reader."""
        cancels: list[dict[Any, Any]] = [{"run": b"\xff\xfe"}, {"nothing": "1"}, {"run": ""}]
        for fields in cancels:
            self.client.xadd(self.keys.cancels(0), fields)
        decisions: list[dict[Any, Any]] = [
            {"run": b"\xff", "call": "c", "approved": "1"},
            {"run": "x", "call": "c", "approved": "yes"},
            {"approved": "1"},
            {"run": "x", "call": b"\xc3", "approved": "0", "reason": b"\xff"},
        ]
        for fields in decisions:
            self.client.xadd(self.keys.decisions(0), fields)

    def close(self) -> None:
        self.client.close()


class SQLitePlace:
    def __init__(self, path: Path) -> None:
        self.path = str(path)
        SQLiteEventLog(self.path).close()  # makes the file and its schema

    def log(self, **options: Any) -> SQLiteEventLog:
        return SQLiteEventLog(self.path, **options)

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with sqlite3.connect(self.path) as db:
            db.executemany(sql, rows)

    def write_runs(self) -> None:
        runs = [*ENTRIES, "text-seq", "int-body", "beat-a-text", "state-a-blob"]
        now = time.time()
        self._write(
            "INSERT INTO runs (run_id, state, started, beat) VALUES (?, 'running', ?, ?)",
            [(run_id, now, now + 600) for run_id in runs],
        )
        self._write(
            "UPDATE runs SET beat = 'soon', state = ? WHERE run_id = ?",
            [("running", "beat-a-text"), (b"\x00", "state-a-blob")],
        )
        rows: list[tuple[str, Any, str, Any]] = [
            (run_id, seq, kind, body)
            for run_id, entries in ENTRIES.items()
            for seq, (kind, body) in enumerate(entries, 1)
        ]
        rows += [("text-seq", "abc", "end", b'{"error": null}'), ("int-body", 1, "e", 7)]
        self._write("INSERT INTO entries (run_id, seq, kind, body) VALUES (?, ?, ?, ?)", rows)

    def write_requests(self) -> None:
        self._write("INSERT INTO cancels (run_id, at) VALUES (?, 0)", [(b"\xff",), (7,)])
        self._write(
            "INSERT INTO decisions (run_id, call_id, approved, reason, at) VALUES (?, ?, ?, ?, 0)",
            [("x", b"\xff", 1, None), ("x", "c", "yes", None), ("y", "c", 1, b"\x00")],
        )

    def close(self) -> None:
        pass


@pytest.fixture(params=["sqlite", "redis"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "redis":
        made: Any = RedisPlace(request.getfixturevalue("redis_server").url)
    else:
        made = SQLitePlace(tmp_path / "runs.db")
    yield made
    made.close()


def reader_thread(log: Any) -> threading.Thread:
    reader = log._hub.reader(0) if isinstance(log, RedisEventLog) else log._reader
    thread = reader._thread
    assert thread is not None
    return thread


def next_heartbeat(log: Any) -> threading.Event:
    """An event set at the reader's next heartbeat."""
    reader = log._hub.reader(0) if isinstance(log, RedisEventLog) else log._reader
    beat, beaten = reader._heartbeat, threading.Event()

    def counted(*args: Any) -> None:
        beat(*args)
        beaten.set()

    reader._heartbeat = counted
    return beaten


def test_garbage_in_the_log_fails_its_runs_only(place: Any) -> None:
    owner, other = place.log(lost_after=3.0), place.log(lost_after=3.0)
    try:
        gate = Gate()
        hanging = ReactAgent(
            ScriptedModel([tool_call_reply(("gate", {})), text_reply("never")]),
            [gate.tool],
            event_log=owner,
        ).start("Wait.")
        paid = threading.Event()

        @tool(requires_approval=True)
        def pay(amount: int) -> str:
            """Pays once a person approves."""
            paid.set()
            return f"paid {amount}"

        script = [tool_call_reply(("pay", {"amount": 3})), text_reply("Paid.")]
        paying = ReactAgent(ScriptedModel(script), [pay], event_log=owner).start("Pay 3.")
        assert gate.reached.wait(10)
        place.write_requests()  # read by the owner's reader before the cancel and decision below
        place.write_runs()

        garbage = {run_id: Collector(follow(run_id, other)) for run_id in ENTRIES}
        plain = ReactAgent(ScriptedModel([text_reply(ANSWER, size=4)]), event_log=owner)
        run = plain.start("Say it.")
        live = Collector(follow(run.id, other))
        for collector in garbage.values():
            assert isinstance(collector.wait().error, RunError)
            assert not isinstance(collector.error, RunCancelledError)
        assert [e.delta for e in garbage["good-then-garbage"].events] == ["fine so far"]
        assert live.wait().error is None and live.text == ANSWER == run.result(timeout=10).answer
        replay = Collector(follow(run.id, other)).wait()
        assert replay.error is None and replay.text == ANSWER

        other.request_cancel(hanging.id)
        other.decide(paying.id, approval_asked(other, paying.id), True)
        assert paying.result(timeout=10).answer == "Paid." and paid.is_set()
        with pytest.raises(RunCancelledError):
            hanging.result(timeout=10)

        beats = [next_heartbeat(log) for log in (owner, other)]
        assert all(beat.wait(10) for beat in beats)  # both readers still beat
        assert reader_thread(owner).is_alive() and reader_thread(other).is_alive()
    finally:
        owner.close()
        other.close()


def test_garbage_runs_of_the_sqlite_file_fail_their_followers(place: Any) -> None:
    """Rows SQLite's dynamic types let through: a text seq, an int body, a text beat, a blob
    state. Each ends its followers (with RunError, or lost), and a good run read in the same
    pass still finishes."""
    if not isinstance(place, SQLitePlace):
        followed = ["a-string-key"]  # Redis: a key of another type is that run's failure
    else:
        followed = ["text-seq", "int-body", "beat-a-text", "state-a-blob"]
    log, owner = place.log(), place.log()
    try:
        place.write_runs()
        broken = [Collector(follow(run_id, log)) for run_id in followed]
        run = ReactAgent(ScriptedModel([text_reply(ANSWER)]), event_log=owner).start("q")
        good = Collector(follow(run.id, log))
        for collector in broken:
            assert isinstance(collector.wait().error, RunError | AgentError)
        assert good.wait().error is None and good.text == ANSWER
        assert reader_thread(log).is_alive()
    finally:
        log.close()
        owner.close()


def approval_asked(log: Any, run_id: str) -> str:
    """Wait for the run's approval request (read through ``log``); its call id."""
    calls: list[str] = []
    seen = threading.Event()

    def on_next(event: Any) -> None:
        if event.type == "tool_approval_requested":
            calls.append(event.call_id)
            seen.set()

    subscription = follow(run_id, log).subscribe(on_next)
    assert seen.wait(10), "no approval request"
    subscription.dispose()
    return calls[0]
