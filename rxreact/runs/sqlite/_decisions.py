"""Approval decisions in a SQLite event log file (see :mod:`rxreact.runs._decisions`)."""

from __future__ import annotations

import sqlite3
import time

from rxreact.runs._decisions import check_waiting, decision_error
from rxreact.runs._read_back import entry_events
from rxreact.runs.sqlite._store import Store

__all__ = ["record_decision"]


def record_decision(
    store: Store, run_id: str, call_id: str, approved: bool, reason: str | None
) -> None:
    """Check the call waits and record the decision, in one write transaction."""
    with store.write("record a decision") as db:
        row = db.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise decision_error(run_id, call_id, "no such run in this event log")
        if row[0] not in ("running", "parked"):
            raise decision_error(run_id, call_id, f"the run is {row[0]}")
        rows = db.execute(
            "SELECT seq, body FROM entries WHERE run_id = ? AND kind = 'e' ORDER BY seq",
            (run_id,),
        ).fetchall()
        check_waiting(run_id, call_id, entry_events(rows))
        try:
            db.execute(
                "INSERT INTO decisions (run_id, call_id, approved, reason, at) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, call_id, int(approved), reason, time.time()),
            )
        except sqlite3.IntegrityError:
            raise decision_error(run_id, call_id, "it was decided already") from None
        # Due at once for a claim if its owner is gone (see rxreact.runs.sqlite._store).
        db.execute("UPDATE runs SET woken = 1 WHERE run_id = ? AND state = 'parked'", (run_id,))
