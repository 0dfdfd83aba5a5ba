"""The owner's side of a :class:`~rxreact.runs.RedisEventLog`: writes queued, sent in batches.

``append`` queues the event and returns; one flush at a time (on a small shared pool) sends
everything queued so far, from every run of the process, as one pipeline, with the consecutive
events of a run in one ``XADD`` entry (:mod:`rxreact.runs._entries`). One flush at a time keeps
every stream's entries in ``seq`` order, and the run never waits for Redis.

A batch that Redis did not take (the connection failed: a restart, a failover, a network
blip) is sent again after :data:`RETRY_WAITS`, before anything queued after it, and exactly as
it was: the same entries with the same ids, so an entry that did reach Redis the first time is
refused as a duplicate (ids only grow) instead of being added twice. Only when every wait is
spent is the batch dropped, with a warning: the run itself went on for its local subscribers
all along; followers in other processes miss those events.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from reactivex import abc

from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._keys import Keys
from rxreact.runs._record import RunRecord
from rxreact.scheduling import shared_scheduler

__all__ = ["RETRY_WAITS", "RunWriterToRedis", "WriteQueue"]

log = logging.getLogger(__name__)

RETRY_WAITS: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 5.0, 5.0)
"""Seconds before each new try of a batch whose pipeline failed (about 19 s in all: a Redis
restart or a failover fits, an outage that lasts does not hold the queue)."""

_DUPLICATE_ID = "equal or smaller than the target stream top item"
"""In Redis's error for an ``XADD`` whose id is already in the stream (a re-sent entry)."""


class WriteQueue:
    """Queued writes of one log's runs and the one flush that sends them."""

    def __init__(self, client: Any, keys: Keys, ttl_ms: int, error_type: type[Exception]) -> None:
        self._client = client
        self._keys = keys
        self._ttl_ms = ttl_ms
        self._error = error_type
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when a flush found nothing left
        self._pending: deque[tuple[Any, ...]] = deque()
        self._flushing = False
        self._failed: list[tuple[Any, ...]] | None = None  # the batch to send again first
        self._tries = 0  # of the failed batch
        self.retry_waits: tuple[float, ...] = RETRY_WAITS
        self.scheduler: abc.SchedulerBase = shared_scheduler("redis-event-log", 2)

    def put(self, item: tuple[Any, ...]) -> None:
        """Queue ``("e", run_id, event)``, ``("ckpt", run_id, body, n, on_sent)`` or
        ``("end", run_id, conversation_id, seq, error)``; a checkpoint's ``on_sent(committed)``
        is called once its pipeline went through (True) or was given up (False)."""
        with self._lock:
            self._pending.append(item)
            if self._flushing:
                return
            self._flushing = True
        self.scheduler.schedule(self._flush)

    def wait_sent(self, timeout: float | None) -> bool:
        """Wait until everything queued so far was sent; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._flushing, timeout)

    def _flush(self, _: abc.SchedulerBase, __: Any = None) -> None:
        while True:
            with self._lock:
                batch, self._failed = self._failed, None
                if batch is None:
                    if not self._pending:
                        self._flushing = False
                        self._idle.notify_all()
                        return
                    batch = list(self._pending)
                    self._pending.clear()
                    self._tries = 0
            try:
                results = self._pipeline(batch).execute(raise_on_error=False)
                executed = True
            except self._error as error:
                if self._tries < len(self.retry_waits):
                    with self._lock:
                        self._failed = batch  # still flushing: wait_sent() waits for it
                    wait = self.retry_waits[self._tries]
                    self._tries += 1
                    self.scheduler.schedule_relative(wait, self._flush)
                    log.info("Redis event log: sending %d writes again: %s", len(batch), error)
                    return
                results, executed = [error], False
            _settle(batch, executed)
            # A re-sent entry that did arrive the first time is refused as a duplicate: fine.
            resent = self._tries > 0
            failures = [
                r
                for r in results
                if isinstance(r, Exception) and not (resent and _DUPLICATE_ID in str(r))
            ]
            if failures:  # the run goes on for local subscribers; followers elsewhere miss these
                log.warning("Redis event log: %d writes failed: %s", len(failures), failures[0])

    def _pipeline(self, batch: list[tuple[Any, ...]]) -> Any:
        """The writes of ``batch`` as one pipeline (the same batch makes the same entries)."""
        keys = self._keys
        pipe = self._client.pipeline(transaction=False)
        touched: set[str] = set()
        events: dict[str, list[AgentEvent]] = {}  # per run, in seq order, not yet added
        for item in batch:
            run_id = item[1]
            if item[0] == "e":
                events.setdefault(run_id, []).append(item[2])
                continue
            self._add_events(pipe, run_id, events.pop(run_id, []))
            touched.add(run_id)
            if item[0] == "ckpt":  # after the events queued before it, in the same pipeline
                pipe.hsetnx(keys.checkpoints(run_id), str(item[3]), item[2])
                continue
            _, run_id, conversation_id, seq, error = item
            pipe.xadd(keys.run(run_id), {"end": encode_end(error)}, id=f"0-{seq}")
            pipe.set(keys.meta(run_id), "ended", px=self._ttl_ms)
            pipe.hset(keys.owner(run_id), "state", "ended")
            pipe.zrem(keys.running, run_id)
            if conversation_id is not None:
                pipe.zrem(keys.active(conversation_id), run_id)
        for run_id, pending in events.items():
            self._add_events(pipe, run_id, pending)
            touched.add(run_id)
        for run_id in touched:
            pipe.pexpire(keys.run(run_id), self._ttl_ms)
            pipe.pexpire(keys.checkpoints(run_id), self._ttl_ms)
        return pipe

    def _add_events(self, pipe: Any, run_id: str, events: list[AgentEvent]) -> None:
        key = self._keys.run(run_id)
        for start in range(0, len(events), MAX_BATCH):
            part = events[start : start + MAX_BATCH]
            pipe.xadd(key, {"e": encode_events(part)}, id=f"0-{part[-1].seq}")


def _settle(batch: list[tuple[Any, ...]], committed: bool) -> None:
    """Tell the checkpoints of ``batch`` how their pipeline went."""
    for item in batch:
        if item[0] == "ckpt":
            item[4](committed)


class RunWriterToRedis:
    """A run's writer: the local record first (subscribers here), then the write queue."""

    __slots__ = ("_checkpoints", "_ended", "_last", "_lock", "_on_end", "_queue", "_record")

    def __init__(
        self, queue: WriteQueue, record: RunRecord, on_end: Callable[[RunRecord], None]
    ) -> None:
        self._queue = queue
        self._record = record
        self._on_end = on_end
        self._lock = threading.Lock()
        self._ended = False
        self._last = 0
        self._checkpoints = 0

    def append(self, event: AgentEvent) -> None:
        """Add the next event here and queue it for Redis."""
        # The lock orders a late event against end() from cancel() on another thread: an entry
        # after the end marker would need an id Redis refuses (ids only grow).
        with self._lock:
            if self._ended:
                return
            self._last = event.seq
            self._record.append(event)
            self._queue.put(("e", self._record.run_id, event))

    def resume_at(self, last_seq: int, checkpoints: int) -> None:
        """A taken-over run: its events go on after ``last_seq``, its checkpoints after the
        first ``checkpoints``."""
        self._last, self._checkpoints = last_seq, checkpoints

    def checkpoint(self, body: bytes, on_sent: Callable[[bool], None]) -> None:
        """Queue a checkpoint (field n of the run's checkpoint hash) after the events so far."""
        with self._lock:
            if self._ended:
                on_sent(False)
                return
            self._queue.put(("ckpt", self._record.run_id, body, self._checkpoints, on_sent))
            self._checkpoints += 1

    def end(self, error: Exception | None = None) -> None:
        """End the run here and queue its end marker (entry ``0-{last seq + 1}``)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            record = self._record
            self._on_end(record)
            record.end(error)
            self._queue.put(("end", record.run_id, record.conversation_id, self._last + 1, error))
