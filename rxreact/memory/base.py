"""The contract of a chat memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rxreact.memory.lease import Lease
from rxreact.messages import Message

__all__ = ["ChatMemory"]


@runtime_checkable
class ChatMemory(Protocol):
    """Conversation histories by conversation id, and the leases that keep runs on one apart.

    The agent calls :meth:`load` once before a run's first round and :meth:`append` once, with
    the whole finished turn, after its final answer: a cancelled or failed run writes nothing.
    Implementations must make ``append`` atomic (all of the turn or none of it) and keep
    conversations apart. Failures should raise :class:`~rxreact.ChatMemoryError`.

    **Leases** (one run per conversation at a time). Before it loads a history the agent takes
    the conversation's lease with :meth:`try_acquire` (it never blocks: the agent retries on
    its own timers), renews it every third of its ttl while the run lives, commits with
    ``append(conversation_id, turn, lease=lease)`` and calls :meth:`release` when the run ends
    (completed, failed or cancelled). A backend writer must guarantee:

    - at most one live lease per conversation, among every process that shares the store;
    - a lease ends ``ttl`` seconds after it was granted or last renewed, even if its holder
      died (so a killed process blocks its conversation for one ttl at most);
    - each grant on a conversation has a fencing token greater than every earlier one;
    - ``append(..., lease=lease)`` writes only if ``lease`` (same owner and token) is still
      live, checked *atomically with the write* (one transaction, one script, one lock hold),
      and otherwise raises :class:`~rxreact.ConversationBusyError` writing nothing;
    - ``append`` without a lease writes as before (callers that do not use leases);
    - :meth:`renew` and :meth:`release` of a lease that was lost change nothing.

    Optionally a backend hands a lease over: a method
    ``hand_over(lease, owner, ttl) -> Lease | None`` that, atomically, grants the conversation
    to ``owner`` for ``ttl`` seconds with token ``lease.token + 1`` if ``lease`` is still the
    conversation's latest grant (live, expired or released: no grant was made after it), and
    otherwise returns ``None`` and changes nothing. From then on the old holder's ``renew`` and
    fenced ``append`` are refused. A resumed run (``agent.resume_runs()``) uses it to take its
    dead (or paused) owner's lease at once; with a backend that lacks it, the resumed run waits
    for that lease to lapse, as for any held conversation. The three rxreact backends have it.

    :meth:`renew` extends by the ``ttl`` of the lease object it is given (a run parked for
    long renews a copy with a longer ttl), as the three rxreact backends do.

    Optionally a backend shared by processes announces releases: a method
    ``releases() -> Observable[str]`` (hot; the ids of conversations whose lease was released
    by any process) lets runs waiting elsewhere start at once instead of at their next poll
    (``RedisChatMemory`` publishes them with pub/sub). Notices may be lost; waiters poll anyway.

    :class:`~rxreact.memory.lease.LeaseTable` implements the bookkeeping for a store that lives
    in one process. A backend that predates leases (only ``load`` and ``append``) still works
    with the agent: it then keeps runs apart within one process only.
    """

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        ...

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        """Add a finished turn to the conversation, atomically.

        With ``lease``, only while that lease is live (checked in the same atomic step);
        otherwise raise :class:`~rxreact.ConversationBusyError` and write nothing.
        """
        ...

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """Grant the conversation to ``owner`` for ``ttl`` seconds, or ``None`` if it is held.

        Never blocks waiting for the holder.
        """
        ...

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl from now; False (and no change) if it was lost."""
        ...

    def release(self, lease: Lease) -> None:
        """End the lease now if it is still live; nothing happens if it was lost."""
        ...
