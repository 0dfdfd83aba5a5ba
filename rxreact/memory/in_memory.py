"""A process-local chat memory."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from rxreact.memory.lease import Lease, LeaseTable, LockedLeases
from rxreact.messages import Message, UserMessage

__all__ = ["InMemoryChatMemory"]


class InMemoryChatMemory(LockedLeases):
    """Histories in a dict, guarded by a lock; optionally trimmed to the last ``max_turns`` turns.

    Messages are kept as they are (images and files with their bytes, replay items): the
    history shares the frozen message objects the run made. Trimming works on whole turns (a
    turn starts at a user message), so an assistant tool-call message is never separated from
    its tool results. Leases are kept in the same lock, so a fenced ``append`` checks its lease
    and writes in one step.

    Args:
        max_turns: keep only the last this many turns of each conversation.
        clock: the clock of lease expiry, in seconds (default ``time.monotonic``); give it
            ``lambda: test_scheduler.clock`` to let leases expire in virtual time.
    """

    def __init__(
        self, *, max_turns: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self._max_turns = max_turns
        self._lock = threading.Lock()
        self._conversations: dict[str, list[Message]] = {}
        self._spend: dict[str, float] = {}
        self._leases = LeaseTable(clock)

    def load(self, conversation_id: str) -> list[Message]:
        """A copy of the conversation's messages."""
        with self._lock:
            return list(self._conversations.get(conversation_id, ()))

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        """Add a turn; all of it becomes visible at once (with ``lease``: only while it is live)."""
        with self._lock:
            self._fence(lease)
            history = [*self._conversations.get(conversation_id, ()), *messages]
            if self._max_turns is not None:
                starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage)]
                if len(starts) > self._max_turns:
                    history = history[starts[-self._max_turns] :]
            self._conversations[conversation_id] = history

    def spend(self, conversation_id: str) -> float:
        """USD the conversation's runs spent so far (a per-conversation ``Budget``)."""
        with self._lock:
            return self._spend.get(conversation_id, 0.0)

    def add_spend(self, conversation_id: str, usd: float) -> float:
        """Add ``usd`` to the conversation's spend; returns the new total."""
        with self._lock:
            total = self._spend[conversation_id] = self._spend.get(conversation_id, 0.0) + usd
            return total

    def conversation_ids(self) -> list[str]:
        """The ids with a stored history."""
        with self._lock:
            return list(self._conversations)

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or all."""
        with self._lock:
            if conversation_id is None:
                self._conversations.clear()
                self._spend.clear()
            else:
                self._conversations.pop(conversation_id, None)
                self._spend.pop(conversation_id, None)
