"""A run's stream entries in Redis: events in batches, then one end marker.

Entry ``0-{seq}`` holds the events up to ``seq`` written since the previous entry (field ``e``,
a JSON array: one pydantic serialisation call per batch, not per event), so a burst of chunks
costs one ``XADD``. The last entry is the end (field ``end``: ``{"error": null | {...}}``).
Readers filter by ``seq``: an entry may start before a reader's cursor.

Decoding trusts nothing it reads: anyone who can write to the log can write any bytes, and
an entry of any other shape is a :class:`ValueError`, never another exception escaping into
the reader that serves every follower of the process.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter

from rxreact.events import AgentEvent
from rxreact.runs._errors import decode_error, encode_error

__all__ = ["MAX_BATCH", "End", "decode_entry", "encode_end", "encode_events"]

MAX_BATCH = 128
"""Events per entry at most, which bounds what one read hands a follower."""

_events: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


class End:
    """The end marker: ``error`` is ``None`` for a completed run."""

    __slots__ = ("error", "seq")

    def __init__(self, seq: int, error: Exception | None) -> None:
        self.seq = seq
        self.error = error


def encode_events(events: Sequence[AgentEvent]) -> bytes:
    """The ``e`` field of an entry holding ``events``."""
    return _events.dump_json(list(events))


def encode_end(error: Exception | None) -> str:
    """The ``end`` field of the end entry."""
    return json.dumps({"error": None if error is None else encode_error(error)})


def decode_entry(seq: int, fields: Mapping[bytes, Any]) -> list[AgentEvent | End]:
    """The events of entry ``0-{seq}``, or its end marker.

    Raises:
        ValueError: the entry is not one this module encoded (an unknown kind, JSON that is
            not the kind's shape, bytes that are not JSON, events that do not validate).
    """
    if type(seq) is not int:
        raise ValueError(f"entry seq {seq!r} is not an integer")
    if b"e" in fields:
        return list(
            _events.validate_json(_text(fields[b"e"], "e"))
        )  # ValidationError: a ValueError
    if b"end" not in fields:
        names = sorted(repr(name) for name in fields)
        raise ValueError(f"entry {seq} is neither events nor an end (fields {', '.join(names)})")
    end = json.loads(_text(fields[b"end"], "end"))
    if not isinstance(end, dict):
        raise ValueError(f"end entry {seq} is {type(end).__name__}, not a JSON object")
    error = end.get("error")
    if error is not None and not isinstance(error, dict):
        raise ValueError(f"end entry {seq}: its error is {type(error).__name__}, not an object")
    return [End(seq, None if error is None else decode_error(error))]


def _text(value: Any, name: str) -> bytes | str:
    if not isinstance(value, bytes | str):
        raise ValueError(f"field {name!r} is {type(value).__name__}, not bytes")
    return value
