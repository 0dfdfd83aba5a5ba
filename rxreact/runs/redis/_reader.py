"""A reader of a :class:`~rxreact.runs.RedisEventLog` (:mod:`rxreact.runs.redis._hub`): one thread,
one ``XREAD BLOCK``, for every follower of the process of runs in one bucket, and every cancel
request and decision addressed to the bucket (:mod:`rxreact.runs.redis._keys`: one bucket on a
single node, so one reader for everything).

A follower holds a cursor (the last ``seq`` handed to it) and a small inbox. Each loop the
reader sends one ``XREAD BLOCK ... STREAMS`` naming every followed run of its bucket (at the
lowest cursor of its followers), the bucket's cancel and decision streams and the reader's own
wake stream (all in the bucket's slot on a cluster), hands the entries to the inboxes, and the
followers deliver them on their own schedulers. A follower whose inbox is full (:data:`INBOX`
events undelivered) is left out of the next reads until it drains, so a slow follower holds at
most about one inbox and one read, and the run never waits for anyone. Entries are decoded
once, by the reader, and the same immutable events go to every follower.

Something that changes what the reader should read (a new follower, a starved one with room
again, ``close``) adds an entry to the wake stream: unlike ``CLIENT UNBLOCK``, a wake sent
just before the reader blocks is not lost, because the reader reads the stream from the last
entry it saw.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from rxreact.errors import RunError, RunLostError, RunNotFoundError
from rxreact.runs._decisions import Decision
from rxreact.runs._delivery import COUNT, deliver, fail
from rxreact.runs._follower import Follower, FollowerSet
from rxreact.runs.redis._keys import Keys

__all__ = ["Reader", "block_limit", "seq_of"]

log = logging.getLogger(__name__)


def seq_of(entry_id: bytes | str) -> int:
    """The ``seq`` of an entry id ``0-seq``."""
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    return int(text.partition("-")[2])


def block_limit(client: Any, beat_s: float) -> float:
    """The longest XREAD BLOCK the client's socket timeout allows (half of it; redis-py 8
    defaults to 5 s), and no longer than a heartbeat period. A cluster client's own timeout
    is its nodes' (it has no pool of its own)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None and hasattr(client, "get_default_node"):
        node = client.get_default_node()
        pool = getattr(getattr(node, "redis_connection", None), "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", {})
    timeout = kwargs.get("socket_timeout") or kwargs.get("orig_socket_timeout")
    return min(beat_s, timeout / 2) if isinstance(timeout, int | float) and timeout > 0 else beat_s


Errors = tuple[type[Exception], ...]
"""What redis-py raises when Redis cannot be reached (a cluster client's errors included)."""


class Reader(FollowerSet):
    """One bucket's reader thread (started on first use) and what it reads for."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        bucket: int,
        on_cancel: Callable[[str], None],
        heartbeat: Callable[[Any], None] | None,
        beat_s: float,
        errors: Errors,
        takeover_timeout: float = 0.0,
        on_decision: Callable[[str, str, bool, str | None], None] | None = None,
        hub_id: str = "",
    ) -> None:
        self._client = client
        self._keys = keys
        self._cancels = keys.cancels(bucket)
        self._decisions = keys.decisions(bucket)
        self._on_cancel = on_cancel
        self._heartbeat = heartbeat  # only one reader of a log beats for its runs
        self._beat_s = beat_s
        self._block_s = block_limit(client, beat_s)
        self._error = errors
        self._takeover_s = takeover_timeout  # how long a lost run may wait for a new owner
        self._wake_key = keys.wake(hub_id or uuid.uuid4().hex, bucket)
        self._lock = threading.Lock()
        self._followers: set[Follower] = set()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._cancel_id = "0-0"
        self._on_decision = on_decision
        self._decision_id = "0-0"

    def ensure_started(self) -> None:
        """Start the reader (once); the cancel stream is read from its current end on, so a
        request made after this returns is seen."""
        with self._lock:
            if self._thread is not None or self._closed.is_set():
                return
            last = self._client.xrevrange(self._cancels, count=1)
            self._cancel_id = last[0][0].decode() if last else "0-0"
            last = self._client.xrevrange(self._decisions, count=1)
            self._decision_id = last[0][0].decode() if last else "0-0"
            self._thread = threading.Thread(
                target=self._loop, name="rxreact-redis-event-log", daemon=True
            )
            self._thread.start()

    def wake(self) -> None:
        """Make the reader re-read what to follow (it may be blocked in XREAD)."""
        with contextlib.suppress(*self._error):
            pipe = self._client.pipeline(transaction=False)
            pipe.xadd(self._wake_key, {"w": "1"}, maxlen=8, approximate=False)
            pipe.pexpire(self._wake_key, 60_000)
            pipe.execute()

    def close(self) -> None:
        self._closed.set()
        thread = self._thread
        if thread is not None:
            self.wake()
            thread.join(10)
        with contextlib.suppress(*self._error):
            self._client.delete(self._wake_key)

    # -- the reader thread --------------------------------------------------------------------

    def _loop(self) -> None:
        wake_id = "0-0"
        next_beat = time.monotonic()
        while not self._closed.is_set():
            now = time.monotonic()
            if now >= next_beat:
                # Each step in its own guard: a failing heartbeat must not stop the reads, nor
                # a failing read the heartbeat. Redis being away is retried at once (below).
                heartbeat = self._heartbeat
                if heartbeat is None or self._guarded("heartbeat", heartbeat, self._client):
                    next_beat = now + self._beat_s
                self._guarded("liveness check", self._check_alive, now, True)
            else:
                self._guarded("liveness check", self._check_alive, now, False)  # new followers
            try:
                groups = self._groups()
                streams = {
                    self._wake_key: wake_id,
                    self._cancels: self._cancel_id,
                    self._decisions: self._decision_id,
                }
                for run_id, members in groups.items():
                    streams[self._keys.run(run_id)] = f"0-{min(f.cursor for f in members)}"
                wait_s = min(next_beat - time.monotonic(), self._block_s)
                block_ms = max(1, int(wait_s * 1000))
                reply = self._client.xread(streams, count=COUNT, block=block_ms) or []
            except self._error as error:
                log.warning("Redis event log reader: %s; retrying in 1 s", error)
                self._closed.wait(1.0)  # a back-off, also ended at once by close()
                continue
            except Exception:  # a bug must not end the one reader every follower relies on
                log.exception("Redis event log reader failed; retrying in 1 s")
                self._closed.wait(1.0)
                continue
            by_key = {self._keys.run(run_id): run_id for run_id in groups}
            for raw_key, entries in reply:
                key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
                if not entries:
                    continue
                last = entries[-1][0].decode()
                if key == self._wake_key:
                    wake_id = last
                elif key == self._cancels:
                    self._cancel_id = last  # first: a bad entry is not read again
                    for entry_id, fields in entries:
                        self._cancelled(entry_id, fields)
                elif key == self._decisions:
                    self._decision_id = last
                    for entry_id, fields in entries:
                        self._decided(entry_id, fields)
                elif key in by_key:
                    run_id = by_key[key]
                    deliver(run_id, groups[run_id], [(seq_of(i), f) for i, f in entries])

    def _guarded(self, what: str, step: Callable[..., None], *args: Any) -> bool:
        """Run one step of the loop; False if Redis failed (worth trying again soon)."""
        try:
            step(*args)
        except self._error as error:
            log.warning("Redis event log reader: %s failed: %s", what, error)
            return False
        except Exception:
            log.exception("Redis event log reader: %s failed", what)
        return True

    def _cancelled(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        run = fields.get(b"run")
        try:
            run_id = run.decode() if isinstance(run, bytes) else None
        except UnicodeDecodeError:
            run_id = None
        if not run_id:
            log.warning("Redis event log: ignored malformed cancel %r", entry_id)
            return
        self._guarded(f"cancel of run {run_id!r}", self._on_cancel, run_id)

    def _decided(self, entry_id: bytes, fields: dict[bytes, bytes]) -> None:
        if self._on_decision is None:
            return
        decision = Decision.of_fields(fields)
        if decision is None:
            log.warning("Redis event log: ignored malformed decision %r", entry_id)
            return
        self._guarded(f"decision {entry_id!r}", self._on_decision, *decision)

    def _groups(self) -> dict[str, list[Follower]]:
        with self._lock:
            followers = list(self._followers)
        groups: dict[str, list[Follower]] = {}
        for follower in followers:
            if follower.wants_more():
                groups.setdefault(follower.run_id, []).append(follower)
        return groups

    def _check_alive(self, now: float, everyone: bool) -> None:
        """Fail the followers of runs that are gone (expired), given up, or whose owner
        stopped beating ``takeover_timeout`` ago with no process taking the run over: every
        follower at a heartbeat, else only those never checked."""
        with self._lock:
            followers = [
                f
                for f in self._followers
                if not f.finished and (everyone or f.checked_at == float("-inf"))
            ]
        if not followers:
            return
        run_ids = sorted({f.run_id for f in followers})
        pipe = self._client.pipeline(transaction=False)
        for run_id in run_ids:
            pipe.get(self._keys.meta(run_id))
            pipe.xrevrange(self._keys.run(run_id), count=1)
            pipe.hmget(self._keys.owner(run_id), ["info", "state"])
        # A key of another type (WRONGTYPE) fails its run only, not every run's check.
        replies = pipe.execute(raise_on_error=False)
        verdicts: dict[str, Exception | None] = {}
        running: set[str] = set()
        missing: set[str] = set()  # no owner beating: lost unless someone takes it over
        for i, run_id in enumerate(run_ids):
            mine = replies[3 * i : 3 * i + 3]
            try:
                if any(isinstance(reply, Exception) for reply in mine):
                    raise ValueError(mine)
                state, last, (info, lease) = mine
            except Exception:  # an error reply, or a reply of another shape
                log.warning("Redis event log: unreadable state of run %r", run_id)
                verdicts[run_id] = RunError(f"unreadable state of run {run_id!r} in Redis")
                continue
            if state == b"running" or lease == b"parked":
                running.add(run_id)
            if state is None and lease == b"parked":  # waiting for people, with no process
                verdicts[run_id] = None
            elif state == b"lost":
                why = info.decode(errors="replace") if info else "it could not be resumed"
                verdicts[run_id] = _lost(run_id, why)
            elif state or (last and b"end" in last[0][1]):
                verdicts[run_id] = None  # running, or ended: the end entry is on its way
            elif not last:
                verdicts[run_id] = RunNotFoundError(f"no run {run_id!r} in this event log")
            else:
                verdicts[run_id] = None
                missing.add(run_id)
        for follower in followers:
            verdict = verdicts.get(follower.run_id)
            if isinstance(verdict, RunNotFoundError) and follower.seen_running:
                # It was running when looked at before, and is gone without writing an event
                # (its process died before its first one): lost, not unknown.
                verdict = None
                missing.add(follower.run_id)
            if follower.run_id not in missing:
                follower.missing_since = None
            elif follower.missing_since is None:
                follower.missing_since = now
            elif now - follower.missing_since >= self._takeover_s:
                verdict = _lost(follower.run_id, "its process is gone and none resumed it")
            if verdict is not None:
                fail([follower], verdict)
            follower.seen_running = follower.seen_running or follower.run_id in running
            follower.checked_at = now


def _lost(run_id: str, why: str = "its process is gone") -> RunLostError:
    return RunLostError(f"run {run_id!r} stopped without an end: {why}")
