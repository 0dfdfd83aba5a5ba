"""Conversation leases: one run per conversation at a time, with fencing.

A run that works on a conversation first takes its lease from the memory
(:meth:`~rxreact.memory.ChatMemory.try_acquire`), loads the history, keeps the lease alive
with :meth:`~rxreact.memory.ChatMemory.renew` while it runs, commits its turn with
``append(..., lease=lease)`` (refused unless the lease is still held, checked atomically with
the write) and finally :meth:`~rxreact.memory.ChatMemory.release` s it.

Each grant on a conversation carries a fencing token one higher than the one before, so a
holder whose lease expired (a paused or partitioned process) and was granted to someone else
is told apart from the new holder even if both use the same owner name.

A lease can also be **handed over** (:meth:`LeaseTable.hand_over`): the process that resumes a
run whose owner stopped takes that owner's lease at once, with the next token, instead of
waiting for it to lapse; the old owner, if it was only paused, is fenced out like any other.

:class:`LeaseTable` is the in-process bookkeeping, for :class:`~rxreact.InMemoryChatMemory`
and for backends that keep their state in one process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from rxreact.errors import ConversationBusyError

__all__ = ["Lease", "LeaseTable", "LockedLeases", "lease_lost"]


class Lease(BaseModel):
    """A grant of one conversation to one owner, until ``ttl`` seconds after the last renewal."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    conversation_id: str
    """The conversation held."""
    owner: str
    """Who holds it: unique per run (rxreact uses ``host/pid/run id``)."""
    token: int
    """The fencing token: 1 for a conversation's first grant, one more for each grant after."""
    ttl: float
    """Seconds the grant lasts without a renewal."""


def lease_lost(lease: Lease) -> ConversationBusyError:
    """The error of a fenced-out write: the lease expired or another run took it over."""
    return ConversationBusyError(
        f"the lease on conversation {lease.conversation_id!r} (token {lease.token}) expired or "
        "was taken over by another run: nothing was written",
        lease.conversation_id,
    )


@dataclass
class _Grant:
    owner: str
    token: int
    expires: float


class LeaseTable:
    """Leases of one process, by conversation id. Not thread-safe: hold your own lock.

    Args:
        clock: seconds, monotonic (default ``time.monotonic``); pass a virtual clock such as
            ``lambda: test_scheduler.clock`` to let leases expire in virtual time.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._grants: dict[str, _Grant] = {}
        self._tokens: dict[str, int] = {}  # last token per conversation, kept after release

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """A new lease, or ``None`` while a live one exists."""
        now = self.clock()
        grant = self._grants.get(conversation_id)
        if grant is not None and grant.expires > now:
            return None
        token = self._tokens.get(conversation_id, 0) + 1
        # Made before anything is recorded: arguments a Lease refuses take nothing.
        lease = Lease(conversation_id=conversation_id, owner=owner, token=token, ttl=ttl)
        self._tokens[conversation_id] = token
        self._grants[conversation_id] = _Grant(owner, token, now + ttl)
        return lease

    def holds(self, lease: Lease) -> bool:
        """True while ``lease`` is the conversation's live grant."""
        grant = self._grants.get(lease.conversation_id)
        return (
            grant is not None
            and grant.owner == lease.owner
            and grant.token == lease.token
            and grant.expires > self.clock()
        )

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl from now; False when it was lost."""
        if not self.holds(lease):
            return False
        self._grants[lease.conversation_id].expires = self.clock() + lease.ttl
        return True

    def hand_over(self, lease: Lease, owner: str, ttl: float) -> Lease | None:
        """A new lease for ``owner`` in place of ``lease``, or ``None`` if a later grant exists.

        ``lease`` may be live, expired or released: what matters is that no grant was made
        after it. The new grant's token is one more, so ``lease`` is fenced out from now on.
        """
        conversation_id = lease.conversation_id
        if self._tokens.get(conversation_id) != lease.token:
            return None
        grant = self._grants.get(conversation_id)
        if grant is not None and grant.owner != lease.owner:
            return None
        token = lease.token + 1
        successor = Lease(conversation_id=conversation_id, owner=owner, token=token, ttl=ttl)
        self._tokens[conversation_id] = successor.token
        self._grants[conversation_id] = _Grant(owner, successor.token, self.clock() + ttl)
        return successor

    def release(self, lease: Lease) -> None:
        """Give the lease back, if it is still this one (a lost lease is left alone)."""
        grant = self._grants.get(lease.conversation_id)
        if grant is not None and grant.owner == lease.owner and grant.token == lease.token:
            del self._grants[lease.conversation_id]


class LockedLeases:
    """The lease methods of a :class:`LeaseTable` under a lock.

    A mixin for an in-process memory: set ``_lock`` (the lock its ``append`` holds) and
    ``_leases``, and call ``self._fence(lease)`` inside ``append`` under that lock.
    """

    _lock: threading.Lock
    _leases: LeaseTable

    def _fence(self, lease: Lease | None) -> None:
        """Raise unless ``lease`` (if any) is live; call it holding ``_lock``, before writing."""
        if lease is not None and not self._leases.holds(lease):
            raise lease_lost(lease)

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """The conversation's lease for ``ttl`` seconds, or ``None`` while another is live."""
        with self._lock:
            return self._leases.try_acquire(conversation_id, owner, ttl)

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl; False if it was lost."""
        with self._lock:
            return self._leases.renew(lease)

    def hand_over(self, lease: Lease, owner: str, ttl: float) -> Lease | None:
        """Pass ``lease`` (live or lapsed, if nothing was granted after it) to ``owner``."""
        with self._lock:
            return self._leases.hand_over(lease, owner, ttl)

    def release(self, lease: Lease) -> None:
        """End a live lease now."""
        with self._lock:
            self._leases.release(lease)
