"""The owner's side of a :class:`~rxreact.runs.RedisEventLog`: writes queued, sent in batches.

``append`` queues the event and returns; one flush at a time (on a small shared pool) sends
everything queued so far, from every run of the process, as one pipeline, with the consecutive
events of a run in one ``XADD`` entry (:mod:`rxreact.runs._entries`). One flush at a time keeps
every stream's entries in ``seq`` order, and the run never waits for Redis.
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

__all__ = ["RunWriterToRedis", "WriteQueue"]

log = logging.getLogger(__name__)


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
        self.scheduler: abc.SchedulerBase = shared_scheduler("redis-event-log", 2)

    def put(self, item: tuple[Any, ...]) -> None:
        """Queue ``("e", run_id, event)`` or ``("end", run_id, conversation_id, seq, error)``."""
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
        keys = self._keys
        while True:
            with self._lock:
                if not self._pending:
                    self._flushing = False
                    self._idle.notify_all()
                    return
                batch = list(self._pending)
                self._pending.clear()
            pipe = self._client.pipeline(transaction=False)
            touched: set[str] = set()
            events: dict[str, list[AgentEvent]] = {}  # per run, in seq order, not yet added
            for item in batch:
                run_id = item[1]
                if item[0] == "e":
                    events.setdefault(run_id, []).append(item[2])
                    continue
                self._add_events(pipe, run_id, events.pop(run_id, []))
                _, run_id, conversation_id, seq, error = item
                pipe.xadd(keys.run(run_id), {"end": encode_end(error)}, id=f"0-{seq}")
                pipe.set(keys.meta(run_id), "ended", px=self._ttl_ms)
                if conversation_id is not None:
                    pipe.zrem(keys.active(conversation_id), run_id)
                touched.add(run_id)
            for run_id, pending in events.items():
                self._add_events(pipe, run_id, pending)
                touched.add(run_id)
            for key in map(keys.run, touched):
                pipe.pexpire(key, self._ttl_ms)
            try:
                results = pipe.execute(raise_on_error=False)
                failures = [r for r in results if isinstance(r, Exception)]
            except self._error as error:
                failures = [error]
            if failures:  # the run goes on for local subscribers; followers elsewhere miss these
                log.warning("Redis event log: %d writes failed: %s", len(failures), failures[0])

    def _add_events(self, pipe: Any, run_id: str, events: list[AgentEvent]) -> None:
        key = self._keys.run(run_id)
        for start in range(0, len(events), MAX_BATCH):
            part = events[start : start + MAX_BATCH]
            pipe.xadd(key, {"e": encode_events(part)}, id=f"0-{part[-1].seq}")


class RunWriterToRedis:
    """A run's writer: the local record first (subscribers here), then the write queue."""

    __slots__ = ("_ended", "_last", "_lock", "_on_end", "_queue", "_record")

    def __init__(
        self, queue: WriteQueue, record: RunRecord, on_end: Callable[[RunRecord], None]
    ) -> None:
        self._queue = queue
        self._record = record
        self._on_end = on_end
        self._lock = threading.Lock()
        self._ended = False
        self._last = 0

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
