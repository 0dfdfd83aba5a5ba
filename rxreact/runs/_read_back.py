"""A run read back from the rows of a SQL event log (SQLite, Postgres): the same tables, so
the same decoding.

``entries`` rows are ``(seq, body)`` of kind ``e``; ``checkpoints`` rows ``(n, body)``;
``decisions`` rows ``(call_id, approved, reason)``. Bodies are trusted no more than
:mod:`rxreact.runs._entries` trusts them: a corrupt row makes an unresumable
:class:`~rxreact.runs.takeover.LostRun` (its ``error`` says why), never an exception in the
claim that found it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rxreact.events import AgentEvent
from rxreact.runs._entries import End, decode_entry
from rxreact.runs.takeover import LostRun

__all__ = ["entry_events", "lost_run"]


def entry_events(rows: Iterable[Sequence[Any]]) -> list[AgentEvent]:
    """The events of ``(seq, body)`` entry rows, in order.

    Raises:
        ValueError: a row is not an entry of ours (see :func:`decode_entry`).
    """
    return [
        e for seq, body in rows for e in decode_entry(seq, {b"e": body}) if not isinstance(e, End)
    ]


def lost_run(
    run_id: str,
    conversation_id: str | None,
    token: int,
    *,
    parked: bool,
    deadline: float | None,
    decisions: Iterable[Sequence[Any]],
    checkpoints: Iterable[Sequence[Any]],
    entries: Sequence[Sequence[Any]],
) -> LostRun:
    """The claimed run ``run_id`` (this claim's ``token``) from its rows."""
    events: list[AgentEvent] = []
    error: str | None = None
    for seq, body in entries:
        try:
            events.extend(entry_events([(seq, body)]))
        except (ValueError, TypeError) as failure:  # not our JSON, or not even text
            error = f"entry {seq} of run {run_id!r} is unreadable: {failure}"
            break
    if error is None and [e.seq for e in events] != list(range(1, len(events) + 1)):
        error = f"the events of run {run_id!r} are not consecutive"
    return LostRun(
        run_id,
        conversation_id,
        token,
        [(f"{run_id}/{n}", _bytes(body)) for n, body in checkpoints],
        events,
        error,
        parked=parked,
        deadline=deadline if parked else None,
        decisions={c: (bool(a), r) for c, a, r in decisions},
    )


def _bytes(body: object) -> bytes:
    """A row's body as bytes, whatever was written into it (a corrupt row may hold text, a
    number, or NULL: decoding it then says it is corrupt)."""
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    return str(body).encode() if body is not None else b""
