"""The stored form of a turn, shared by the persistent backends: one JSON array per turn."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import TypeAdapter, ValidationError

from rxreact.errors import ChatMemoryError
from rxreact.messages import Message

__all__ = ["decode_turns", "encode_turn"]

_TURN = TypeAdapter(list[Message])


def encode_turn(messages: Sequence[Message]) -> bytes:
    """A whole turn as one JSON array: the unit a backend stores, trims and loads."""
    return _TURN.dump_json(list(messages))


def decode_turns(
    turns: Iterable[tuple[object, str | bytes]], where: str, conversation_id: str
) -> list[Message]:
    """The messages of stored turns, oldest first, from ``(turn label, JSON)`` pairs.

    A turn that is not valid JSON or not a list of messages raises :class:`ChatMemoryError`
    naming it (``where`` says which store), instead of a pydantic error from deep inside.
    """
    history: list[Message] = []
    for label, data in turns:
        try:
            history.extend(_TURN.validate_json(data))
        except (ValidationError, ValueError, TypeError) as error:
            raise ChatMemoryError(
                f"{where}: turn {label} of conversation {conversation_id!r} is corrupt: {error}"
            ) from error
    return history
