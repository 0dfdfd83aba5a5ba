"""The contract of a chat memory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rxreact.messages import Message

__all__ = ["ChatMemory"]


@runtime_checkable
class ChatMemory(Protocol):
    """Conversation histories by conversation id.

    The agent calls :meth:`load` once before a run's first round and :meth:`append` once, with
    the whole finished turn, after its final answer: a cancelled or failed run writes nothing.
    Implementations must make ``append`` atomic (all of the turn or none of it) and keep
    conversations apart. Failures should raise :class:`~rxreact.ChatMemoryError`.
    """

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        ...

    def append(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Add a finished turn to the conversation, atomically."""
        ...
