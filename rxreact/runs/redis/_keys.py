"""The Redis keys of a :class:`~rxreact.runs.RedisEventLog`, all under its prefix.

On one node the names are the ones rxreact has always used (``{prefix}run:{id}``, the one
``{prefix}running`` index, the one ``{prefix}cancels`` stream...), so runs stored before
Redis Cluster support stay readable, in one *bucket* (0).

On a Redis Cluster every run belongs to one of :data:`CLUSTER_BUCKETS` buckets (by a CRC-32
of its id), and each key of a bucket carries the bucket's hash tag right after the prefix:
``{prefix}{<tag>}run:{id}``, ``{prefix}{<tag>}running``, ``{prefix}{<tag>}cancels``... A run's
keys, its bucket's indexes, the cancel and decision streams its owner reads and the readers'
wake streams then share one slot: every script and every ``XREAD`` touches one slot. The tags
are chosen so that the buckets' slots are spread evenly over the 16,384 slots (and so over
the masters of an evenly sliced cluster). A conversation's ``active`` set is a key of its own
(its own slot), only ever written by single-key commands.
"""

from __future__ import annotations

import binascii
import zlib
from functools import cache

__all__ = ["CLUSTER_BUCKETS", "Keys"]

CLUSTER_BUCKETS = 16
"""Buckets of runs on a Redis Cluster: slots used, and blocking readers a process may hold
(one per bucket it follows or owns runs in). Every process on one cluster must agree on it."""

_SLOTS = 16384


def _slot(tag: str) -> int:
    """Redis Cluster's slot of a hash tag (CRC16/XMODEM, as ``CLUSTER KEYSLOT``)."""
    return binascii.crc_hqx(tag.encode(), 0) % _SLOTS


@cache
def _tags(buckets: int) -> tuple[str, ...]:
    """For bucket k, the first tag ``b<k>.<n>`` whose slot is in the k-th of ``buckets``
    equal ranges of slots."""
    width = _SLOTS // buckets
    tags: list[str] = []
    for k in range(buckets):
        n = 0
        while _slot(f"b{k}.{n}") // width != k:
            n += 1
        tags.append(f"b{k}.{n}")
    return tuple(tags)


class Keys:
    """Key names; see :mod:`rxreact.runs.redis` for what each holds."""

    __slots__ = ("_bases", "buckets", "cluster", "prefix")

    def __init__(self, prefix: str, *, cluster: bool = False) -> None:
        self.prefix = prefix
        self.cluster = cluster
        self.buckets = CLUSTER_BUCKETS if cluster else 1
        """How many buckets the runs are spread over (1 on one node)."""
        self._bases = (
            tuple(f"{prefix}{{{tag}}}" for tag in _tags(CLUSTER_BUCKETS)) if cluster else (prefix,)
        )

    def bucket(self, run_id: str) -> int:
        """The bucket of a run (0 on one node)."""
        if not self.cluster:
            return 0
        return zlib.crc32(run_id.encode("utf-8", "surrogatepass")) % self.buckets

    def base(self, bucket: int) -> str:
        """The start of every key of ``bucket`` (the prefix, and its hash tag on a cluster)."""
        return self._bases[bucket]

    def _of(self, run_id: str) -> str:
        return f"{self._bases[self.bucket(run_id)]}run:{run_id}"

    def run(self, run_id: str) -> str:
        """The run's stream of entries."""
        return self._of(run_id)

    def meta(self, run_id: str) -> str:
        """``running`` (kept alive by heartbeats) or ``ended``."""
        return f"{self._of(run_id)}:meta"

    def checkpoints(self, run_id: str) -> str:
        """The hash of the run's checkpoints: field n holds checkpoint n (JSON)."""
        return f"{self._of(run_id)}:ckpt"

    def decided(self, run_id: str) -> str:
        """The hash of the run's approval decisions, by call id (the first one wins)."""
        return f"{self._of(run_id)}:decided"

    def owner(self, run_id: str) -> str:
        """The run's lease: a hash of owner, token (fencing), conversation, state, info."""
        return f"{self._of(run_id)}:owner"

    def running(self, bucket: int) -> str:
        """The bucket's sorted set of runs begun and not ended, scored by when a claim may
        take each (the *due* index): a running run at its last heartbeat plus
        ``lost_after``, a parked one at its deadline (``+inf``: none)."""
        return f"{self._bases[bucket]}running"

    def woken(self, bucket: int) -> str:
        """The bucket's set of runs decided on since they parked: a claim looks at these and
        at the due part of :meth:`running`, never at every parked run."""
        return f"{self._bases[bucket]}woken"

    def cancels(self, bucket: int) -> str:
        """The bucket's stream of cancel requests, read by every process owning runs in it."""
        return f"{self._bases[bucket]}cancels"

    def decisions(self, bucket: int) -> str:
        """The bucket's stream of approval decisions, read by every process owning runs in
        it."""
        return f"{self._bases[bucket]}decisions"

    def active(self, conversation_id: str) -> str:
        """The sorted set of the runs started on a conversation."""
        return f"{self.prefix}active:{conversation_id}"

    def wake(self, hub_id: str, bucket: int = 0) -> str:
        """A reader's private wake stream (in the bucket it reads)."""
        return f"{self._bases[bucket]}wake:{hub_id}"
