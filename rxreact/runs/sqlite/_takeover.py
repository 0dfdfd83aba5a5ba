"""Claiming lost runs in a SQLite event log file (see :mod:`rxreact.runs.takeover`).

The claim is one ``BEGIN IMMEDIATE`` transaction: it finds the running runs whose beat is
older than ``lost_after`` and moves each to the claimant with the next fencing token and a
fresh beat. Transactions on one file are serialized, so a second worker claiming at the same
moment finds the beat fresh and claims nothing.
"""

from __future__ import annotations

import json
import time

from rxreact.events import AgentEvent
from rxreact.runs._entries import End, decode_entry
from rxreact.runs.sqlite._store import Store
from rxreact.runs.takeover import LostRun

__all__ = ["claim_lost", "give_up"]


def claim_lost(store: Store, owner: str, lost_after: float, limit: int) -> list[LostRun]:
    """Claim up to ``limit`` lost runs for ``owner`` and read each one back."""
    now = time.time()
    with store.read("look for lost runs") as db:  # most ticks: nothing lost, no write lock
        candidate = db.execute(_CLAIMABLE + " LIMIT 1", (now - lost_after, now)).fetchone()
    if candidate is None:
        return []
    with store.write("claim lost runs") as db:
        rows = db.execute(
            _CLAIMABLE + " ORDER BY started LIMIT ?", (now - lost_after, now, limit)
        ).fetchall()
        claimed: list[tuple[str, str | None, int, str | None]] = []
        for run_id, conversation_id, token, info in rows:
            # A parked run stays parked: its new owner unparks it before anything runs.
            moved = db.execute(
                "UPDATE runs SET owner = ?, token = ?, beat = ? WHERE run_id = ? AND token = ?",
                (owner, token + 1, now, run_id, token),
            )
            if moved.rowcount == 1:
                claimed.append((run_id, conversation_id, token + 1, info))
    return [_read_back(store, *claim) for claim in claimed]


# Lost: a running run whose owner stopped beating. A parked run (its owner may be gone for
# days) only once there is something to do: a decision made since it parked, or its deadline.
_CLAIMABLE = (
    "SELECT run_id, conversation_id, token, info FROM runs r WHERE r.beat < ?1 AND "
    "(r.state = 'running' OR (r.state = 'parked' AND ("
    "json_extract(r.info, '$.deadline') < ?2 OR EXISTS (SELECT 1 FROM decisions d "
    "WHERE d.run_id = r.run_id AND d.at >= json_extract(r.info, '$.since')))))"
)


def _read_back(
    store: Store, run_id: str, conversation_id: str | None, token: int, info: str | None
) -> LostRun:
    parked = _parked(info)
    with store.read("read a lost run") as db:
        decisions = db.execute(
            "SELECT call_id, approved, reason FROM decisions WHERE run_id = ?", (run_id,)
        ).fetchall()
        checkpoints = db.execute(
            "SELECT n, body FROM checkpoints WHERE run_id = ? ORDER BY n", (run_id,)
        ).fetchall()
        entries = db.execute(
            "SELECT seq, body FROM entries WHERE run_id = ? AND kind = 'e' ORDER BY seq",
            (run_id,),
        ).fetchall()
    events: list[AgentEvent] = []
    error: str | None = None
    try:
        for seq, body in entries:
            events.extend(e for e in decode_entry(seq, {b"e": body}) if not isinstance(e, End))
    except (ValueError, TypeError) as failure:  # not our JSON, or not even text
        error = f"entry {seq} of run {run_id!r} is unreadable: {failure}"
    if error is None and [e.seq for e in events] != list(range(1, len(events) + 1)):
        error = f"the events of run {run_id!r} are not consecutive"
    return LostRun(
        run_id,
        conversation_id,
        token,
        [(f"{run_id}/{n}", _bytes(body)) for n, body in checkpoints],
        events,
        error,
        parked=parked is not None,
        deadline=None if parked is None else parked.get("deadline"),
        decisions={c: (bool(a), r) for c, a, r in decisions},
    )


def _parked(info: str | None) -> dict[str, float | None] | None:
    """The park record of a parked run's ``info`` (None: the run was running)."""
    if info is None:
        return None
    try:
        record = json.loads(info)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _bytes(body: object) -> bytes:
    """A row's body as bytes, whatever was written into it (a corrupt row may hold text, a
    number, or NULL: decoding it then says it is corrupt)."""
    if isinstance(body, bytes):
        return body
    return str(body).encode() if body is not None else b""


def give_up(store: Store, lost: LostRun, reason: str) -> None:
    """Mark the run lost (if this claim still holds it), with ``reason`` for its followers."""
    with store.write("give up a run") as db:
        db.execute(
            "UPDATE runs SET state = 'lost', info = ?, ended_at = ? WHERE run_id = ? AND token = ?",
            (reason, time.time(), lost.run_id, lost.token),
        )
