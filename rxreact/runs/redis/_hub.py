"""The readers of a :class:`~rxreact.runs.RedisEventLog`: one per bucket it reads
(:mod:`rxreact.runs.redis._keys`), each a thread blocked in one ``XREAD``
(:mod:`rxreact.runs.redis._reader`).

On one node there is one bucket, so one reader for every follower, cancel request and
decision, as always. On a Redis Cluster an ``XREAD`` may only name streams of one slot, and a
bucket is one slot: a process holds one reader for each bucket it follows or owns runs in (at
most :data:`~rxreact.runs.redis._keys.CLUSTER_BUCKETS`), started when first needed, each on a
connection of the master serving that slot. Wake-ups are per reader (its wake stream is in its
bucket), so they work across nodes. The reader of bucket 0 is always started first and is the
one that beats for the log's runs.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from rxreact.runs._follower import Follower
from rxreact.runs.redis._keys import Keys
from rxreact.runs.redis._reader import Errors, Reader

__all__ = ["Hub"]


class Hub:
    """A log's readers, by bucket; see the module doc."""

    def __init__(
        self,
        client: Any,
        keys: Keys,
        on_cancel: Callable[[str], None],
        heartbeat: Callable[[Any], None],
        beat_s: float,
        errors: Errors,
        takeover_timeout: float = 0.0,
        on_decision: Callable[[str, str, bool, str | None], None] | None = None,
    ) -> None:
        self._keys = keys
        hub_id = uuid.uuid4().hex

        def reader(bucket: int) -> Reader:
            beats = heartbeat if bucket == 0 else None
            return Reader(
                *(client, keys, bucket, on_cancel, beats, beat_s, errors),
                *(takeover_timeout, on_decision, hub_id),
            )

        self._make = reader
        self._readers: dict[int, Reader] = {}
        self._lock = threading.Lock()

    def reader(self, bucket: int) -> Reader:
        """The bucket's reader (made, not started, on first use)."""
        with self._lock:
            found = self._readers.get(bucket)
            if found is None:
                found = self._readers[bucket] = self._make(bucket)
            return found

    def ensure_started(self, run_id: str | None = None) -> None:
        """Start the beating reader, and the reader of ``run_id``'s bucket: cancel requests
        and decisions for that run made after this returns are seen."""
        self.reader(0).ensure_started()
        if run_id is not None:
            self.reader(self._keys.bucket(run_id)).ensure_started()

    def add(self, follower: Follower) -> None:
        """Follow ``follower``'s run (it was made with :meth:`reader` of the run's bucket)."""
        self.reader(0).ensure_started()
        self.reader(self._keys.bucket(follower.run_id)).add(follower)

    def close(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
        for each in readers:
            each.close()
