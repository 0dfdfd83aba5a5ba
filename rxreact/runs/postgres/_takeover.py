"""Claiming lost runs, and recording decisions, in a Postgres event log (see
:mod:`rxreact.runs.takeover` and :mod:`rxreact.runs._decisions`).

A claim is one short transaction: ``SELECT ... WHERE due_at <= now ... FOR UPDATE SKIP
LOCKED`` (an index range on ``due_at``: the parked runs nothing woke are not in it, however
many there are), then the claimed rows get the claimant, the next fencing token and a fresh
lapse, which moves them out of the range. Two workers claiming at once skip each other's
locked rows, so each run goes to exactly one.
"""

from __future__ import annotations

from rxreact._postgres import PostgresPool
from rxreact.runs._decisions import check_waiting, decision_error
from rxreact.runs._read_back import entry_events, lost_run
from rxreact.runs.takeover import LostRun

__all__ = ["claim_lost", "give_up", "record_decision"]


def claim_lost(
    db: PostgresPool, sql: dict[str, str], owner: str, lost_after: float, limit: int
) -> list[LostRun]:
    """Claim up to ``limit`` due runs for ``owner`` and read each one back."""
    with db.read("look for lost runs") as cur:  # most ticks: nothing due, no transaction
        cur.execute(sql["due"])
        if cur.fetchone() is None:
            return []
    with db.transaction("claim lost runs") as cur:
        cur.execute(sql["claimable"], (limit,))
        rows = cur.fetchall()
        if rows:
            cur.execute(sql["claim"], (owner, lost_after, [row[0] for row in rows]))
    return [
        _read_back(db, sql, run_id, conversation_id, token + 1, state, deadline)
        for run_id, conversation_id, token, state, deadline in rows
    ]


def _read_back(
    db: PostgresPool,
    sql: dict[str, str],
    run_id: str,
    conversation_id: str | None,
    token: int,
    state: str,
    deadline: float | None,
) -> LostRun:
    with db.read("read a lost run") as cur:
        cur.execute(sql["run_decisions"], (run_id,))
        decisions = cur.fetchall()
        cur.execute(sql["run_checkpoints"], (run_id,))
        checkpoints = cur.fetchall()
        cur.execute(sql["run_events"], (run_id,))
        entries = cur.fetchall()
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


def give_up(
    db: PostgresPool, sql: dict[str, str], channel: str, lost: LostRun, reason: str
) -> None:
    """Mark the run lost (if this claim still holds it), with ``reason`` for its followers."""
    with db.transaction("give up a run") as cur:
        cur.execute(sql["give_up"], (reason, lost.run_id, lost.token))
        cur.execute(sql["notify_one"], (channel, f"e:{lost.run_id}"))


def record_decision(
    db: PostgresPool,
    sql: dict[str, str],
    notice: tuple[str, str],
    run_id: str,
    call_id: str,
    approved: bool,
    reason: str | None,
) -> None:
    """Check the call waits and record the decision, in one transaction that holds the run's
    row (so a park committing at the same moment sees the decision, or is seen by it)."""
    with db.transaction("record a decision") as cur:
        cur.execute(sql["run_state"], (run_id,))
        row = cur.fetchone()
        if row is None:
            raise decision_error(run_id, call_id, "no such run in this event log")
        if row[0] not in ("running", "parked"):
            raise decision_error(run_id, call_id, f"the run is {row[0]}")
        cur.execute(sql["run_events"], (run_id,))
        check_waiting(run_id, call_id, entry_events(cur.fetchall()))
        cur.execute(sql["decide"], (run_id, call_id, approved, reason))
        if cur.fetchone() is None:
            raise decision_error(run_id, call_id, "it was decided already")
        cur.execute(sql["wake"], (run_id,))
        cur.execute(sql["notify_one"], notice)
