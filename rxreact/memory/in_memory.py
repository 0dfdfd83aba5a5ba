"""A process-local chat memory."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from rxreact.messages import Message, UserMessage

__all__ = ["InMemoryChatMemory"]


class InMemoryChatMemory:
    """Histories in a dict, guarded by a lock; optionally trimmed to the last ``max_turns`` turns.

    Trimming works on whole turns (a turn starts at a user message), so an assistant tool-call
    message is never separated from its tool results.
    """

    def __init__(self, *, max_turns: int | None = None) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self._max_turns = max_turns
        self._lock = threading.Lock()
        self._conversations: dict[str, list[Message]] = {}

    def load(self, conversation_id: str) -> list[Message]:
        """A copy of the conversation's messages."""
        with self._lock:
            return list(self._conversations.get(conversation_id, ()))

    def append(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Add a turn; all of it becomes visible at once."""
        with self._lock:
            history = [*self._conversations.get(conversation_id, ()), *messages]
            if self._max_turns is not None:
                starts = [i for i, m in enumerate(history) if isinstance(m, UserMessage)]
                if len(starts) > self._max_turns:
                    history = history[starts[-self._max_turns] :]
            self._conversations[conversation_id] = history

    def conversation_ids(self) -> list[str]:
        """The ids with a stored history."""
        with self._lock:
            return list(self._conversations)

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or all."""
        with self._lock:
            if conversation_id is None:
                self._conversations.clear()
            else:
                self._conversations.pop(conversation_id, None)
