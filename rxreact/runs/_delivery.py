"""Handing a run's entries to its followers, for both shared logs' readers (Redis, SQLite).

One reader serves every follower of its process, so what it reads for one run must not stop
it reading for the others: an entry that does not decode, or anything else that fails while
one run's entries are handed out, ends that run's followers with a
:class:`~rxreact.RunError` and the reader goes on with the next run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from rxreact.errors import RunError
from rxreact.runs._entries import decode_entry
from rxreact.runs._follower import Follower, Item

__all__ = ["COUNT", "deliver"]

COUNT = 32
"""Entries per run per read, for every shared log's reader (each entry holds up to
:data:`~rxreact.runs._entries.MAX_BATCH` events)."""

log = logging.getLogger(__name__)


def deliver(
    run_id: str, members: list[Follower], entries: Iterable[tuple[int, Mapping[bytes, Any]]]
) -> None:
    """Decode ``entries`` (``(seq, fields)`` in order) once and hand each follower of
    ``run_id`` those after its cursor; a failure becomes the followers' ``RunError``."""
    try:
        items, last = _decoded(run_id, entries)
        for follower in members:
            cursor = follower.cursor
            mine: list[Item] = [i for i in items if isinstance(i, Exception) or i.seq > cursor]
            follower.cursor = max(cursor, last)
            if mine:
                follower.push(mine)
    except Exception as error:  # a bug here must not end the reader: this run's followers fail
        log.exception("could not hand out the entries of run %r", run_id)
        fail(members, RunError(f"could not read run {run_id!r}: {type(error).__name__}"))


def fail(members: list[Follower], error: Exception) -> None:
    """End each follower with ``error``; one that cannot take it is dropped from its reader."""
    for follower in members:
        try:
            follower.push([error])
        except Exception:
            log.exception("follower of run %r cannot take its error; dropped", follower.run_id)
            follower.dispose()


def _decoded(
    run_id: str, entries: Iterable[tuple[int, Mapping[bytes, Any]]]
) -> tuple[list[Item], int]:
    """The entries' items up to the first that does not decode (then its ``RunError``), and
    the last seq read."""
    read = list(entries)
    items: list[Item] = []
    last = max((seq for seq, _ in read if type(seq) is int), default=0)
    for seq, fields in read:
        try:
            decoded = decode_entry(seq, fields)
        except ValueError as error:  # not our entry: say so rather than stop reading
            log.warning("unreadable entry of run %r: %s", run_id, error)
            items.append(RunError(f"unreadable entry of run {run_id!r}: {error}"))
            break
        items.extend(decoded)
    return items, last
