"""Claiming lost runs in a SQLite event log file (see :mod:`rxreact.runs.takeover`).

The claim is one ``BEGIN IMMEDIATE`` transaction: it reads the runs whose ``due_at`` passed
(a range of the ``runs_due`` index: the parked runs nothing woke are not in it, however many
there are; see :mod:`rxreact.runs.sqlite._store`) and moves each to the claimant with the
next fencing token and a fresh beat, which moves it out of the range. Transactions on one
file are serialized, so a second worker claiming at the same moment finds the beat fresh and
claims nothing.
"""

from __future__ import annotations

import time

from rxreact.runs._read_back import lost_run
from rxreact.runs.sqlite._store import Store
from rxreact.runs.takeover import LostRun

__all__ = ["CLAIMABLE", "claim_lost", "give_up"]

CLAIMABLE = (
    "SELECT run_id, conversation_id, token, state, deadline FROM runs "
    "WHERE due_at <= ? ORDER BY due_at LIMIT ?"
)
"""The runs a claim may take at a time, by how long they have been due."""


def claim_lost(store: Store, owner: str, lost_after: float, limit: int) -> list[LostRun]:
    """Claim up to ``limit`` due runs for ``owner`` and read each one back."""
    now = time.time()
    with store.read("look for lost runs") as db:  # most ticks: nothing due, no write lock
        if not db.execute(CLAIMABLE, (now, 1)).fetchall():
            return []
    with store.write("claim lost runs") as db:
        rows = db.execute(CLAIMABLE, (now, limit)).fetchall()
        claimed: list[tuple[str, str | None, int, str, float | None]] = []
        for run_id, conversation_id, token, state, deadline in rows:
            # A parked run stays parked: its new owner unparks it before anything runs.
            moved = db.execute(
                "UPDATE runs SET owner = ?, token = ?, beat = ?, lost_after = ? "
                "WHERE run_id = ? AND token = ?",
                (owner, token + 1, now, lost_after, run_id, token),
            )
            if moved.rowcount == 1:
                claimed.append((run_id, conversation_id, token + 1, state, deadline))
    return [_read_back(store, *claim) for claim in claimed]


def _read_back(
    store: Store,
    run_id: str,
    conversation_id: str | None,
    token: int,
    state: str,
    deadline: float | None,
) -> LostRun:
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
    return lost_run(
        run_id,
        conversation_id,
        token,
        parked=state == "parked",
        deadline=deadline,
        decisions=decisions,
        checkpoints=checkpoints,
        entries=entries,
    )


def give_up(store: Store, lost: LostRun, reason: str) -> None:
    """Mark the run lost (if this claim still holds it), with ``reason`` for its followers."""
    with store.write("give up a run") as db:
        db.execute(
            "UPDATE runs SET state = 'lost', info = ?, ended_at = ? WHERE run_id = ? AND token = ?",
            (reason, time.time(), lost.run_id, lost.token),
        )
