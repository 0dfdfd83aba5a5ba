"""The owner's side of a :class:`~rxreact.runs.RedisEventLog`: one pipeline per flush.

The queue, the flush and the retries are :mod:`rxreact.runs._write_queue`'s; here a batch is
one pipeline holding one fenced script call per run (:mod:`rxreact.runs.redis._fence`), with
the consecutive events of a run in one ``XADD`` entry (:mod:`rxreact.runs._entries`). So a
flush costs one round trip however many runs it carries, and a run another process claimed
is refused in the same step that would have written it.

A batch Redis did not take (the connection failed: a restart, a failover, a network blip)
is sent again exactly as it was: the same entries with the same ids, so an entry that did
reach Redis the first time is skipped as a duplicate (ids only grow) instead of being added
twice.
"""

from __future__ import annotations

import logging
import time
from typing import Any, ClassVar

from rxreact.events import AgentEvent
from rxreact.runs._entries import MAX_BATCH, encode_end, encode_events
from rxreact.runs._write_queue import RETRY_WAITS, Fence, Item, QueuedRunWriter, Sent, WriteQueue
from rxreact.runs.redis._fence import REFUSED, Done, add_call, execute, tidy_active
from rxreact.runs.redis._keys import Keys

__all__ = ["RETRY_WAITS", "RedisWriteQueue", "RunWriterToRedis"]


class RedisWriteQueue(WriteQueue):
    """Queued writes of one log's runs and the one flush that sends them."""

    store: ClassVar[str] = "Redis event log"
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(
        self,
        client: Any,
        keys: Keys,
        ttl_ms: int,
        lost_ms: int,
        error_type: type[Exception] | tuple[type[Exception], ...],
    ) -> None:
        super().__init__(error_type, "redis-event-log")
        self._client = client
        self._keys = keys
        self._ttl_ms = ttl_ms
        self._lost_ms = lost_ms

    def _send(self, batch: list[Item]) -> Sent:
        """Send ``batch`` as one pipeline of one fenced script call per run."""
        runs = _ops_by_run(batch)
        keys, ttl_ms, lost_ms = self._keys, self._ttl_ms, self._lost_ms

        def build(pipe: Any) -> None:
            for fence, (conversation_id, ops) in runs.items():
                add_call(pipe, keys, fence, conversation_id, ops, ttl_ms, lost_ms)

        results = execute(self._client, build)
        refused: list[Fence] = []
        failed: list[Fence] = []
        done: list[Done] = []
        for (fence, (conversation_id, ops)), result in zip(runs.items(), results, strict=True):
            if result == REFUSED:
                refused.append(fence)
            elif isinstance(result, Exception):
                failed.append(fence)
                self.log.warning(
                    "%s: writes of run %s failed: %s", self.store, fence.run_id, result
                )
            elif result and not self._tries:  # skipped entries are expected only when re-sent
                failed.append(fence)
                self.log.warning(
                    "%s: %d entries of run %s were there already", self.store, result, fence.run_id
                )
            else:
                done.append((fence.run_id, conversation_id, ops))
        tidy_active(self._client, keys, done, ttl_ms)  # a cluster's active sets, after
        return Sent(refused, failed)


def _ops_by_run(batch: list[Item]) -> dict[Fence, tuple[str | None, list[Any]]]:
    """Each run's script ops (and its conversation, for ``end``), in the order queued."""
    runs: dict[Fence, tuple[str | None, list[Any]]] = {}
    events: dict[Fence, list[AgentEvent]] = {}  # per run, in seq order, not yet in ops
    for item in batch:
        kind, fence = item[0], item[1]
        if kind == "e":
            events.setdefault(fence, []).append(item[2])
            continue
        conversation_id, ops = runs.setdefault(fence, (None, []))
        _add_events(ops, events.pop(fence, []))
        if kind == "ckpt":  # after the events queued before it, in the same step
            ops += ("c", item[3], item[2])
            continue
        if kind == "park":  # its conversation's active set is kept as long as the run
            _, _, conversation_id, since, deadline, _ = item
            ops += ("park", repr(since), "" if deadline is None else repr(deadline))
            runs[fence] = (conversation_id, ops)
            continue
        if kind == "unpark":  # due again as a running run, lost_after from now
            ops += ("unpark", repr(time.time()))
            continue
        _, _, conversation_id, seq, error, _ = item
        ops += ("end", f"0-{seq}", encode_end(error))
        runs[fence] = (conversation_id, ops)
    for fence, pending in events.items():
        _add_events(runs.setdefault(fence, (None, []))[1], pending)
    return runs


def _add_events(ops: list[Any], events: list[AgentEvent]) -> None:
    for start in range(0, len(events), MAX_BATCH):
        part = events[start : start + MAX_BATCH]
        ops += ("e", f"0-{part[-1].seq}", encode_events(part))


class RunWriterToRedis(QueuedRunWriter):
    """A run's writer: the local record first (subscribers here), then Redis."""

    __slots__ = ()

    def resume_at(self, last_seq: int, checkpoints: int) -> None:
        """A taken-over run: its events go on after ``last_seq``, its checkpoints after the
        first ``checkpoints``."""
        self._fence.last_seq, self._fence.checkpoints = last_seq, checkpoints
