"""A run's stream entries in Redis: events in batches, then one end marker.

Entry ``0-{seq}`` holds the events up to ``seq`` written since the previous entry (field ``e``,
a JSON array: one pydantic serialisation call per batch, not per event), so a burst of chunks
costs one ``XADD``. The last entry is the end (field ``end``: ``{"error": null | {...}}``).
Readers filter by ``seq``: an entry may start before a reader's cursor.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

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


def decode_entry(seq: int, fields: dict[bytes, bytes]) -> list[AgentEvent | End]:
    """The events of entry ``0-{seq}``, or its end marker."""
    data = fields.get(b"e")
    if data is not None:
        return list(_events.validate_json(data))
    error = json.loads(fields.get(b"end", b"{}")).get("error")
    return [End(seq, None if error is None else decode_error(error))]
