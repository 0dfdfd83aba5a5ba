"""What the reader threads of the SQL event logs (SQLite, Postgres) do the same way with the
followers of their process: group them by run, pick those a liveness check is for, and judge
a run's row (gone, lost, stale, of an unknown state) for its followers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rxreact.errors import RunError, RunLostError, RunNotFoundError
from rxreact.runs._follower import Follower

__all__ = ["LIVE", "by_run", "fields", "to_check", "verdict"]

LIVE = ("running", "parked")
"""States of a run that goes on (a parked run is waiting for people, not gone)."""


def by_run(followers: Iterable[Follower]) -> dict[str, list[Follower]]:
    """The followers that want more, by the run they follow."""
    groups: dict[str, list[Follower]] = {}
    for follower in followers:
        if follower.wants_more():
            groups.setdefault(follower.run_id, []).append(follower)
    return groups


def to_check(followers: Iterable[Follower], everyone: bool) -> list[Follower]:
    """The followers a liveness check is for: every unfinished one, or those never checked."""
    return [f for f in followers if not f.finished and (everyone or f.checked_at == float("-inf"))]


def verdict(follower: Follower, row: tuple[Any, bool, Any] | None) -> Exception | None:
    """What ``follower`` gets from its run's ``(state, stale, info)`` row (None: no row), if
    anything; ``stale``: running, with no beat for longer than followers wait."""
    run_id = follower.run_id
    if row is None:
        if follower.seen_running:
            return _lost(run_id, "its process is gone")
        return RunNotFoundError(f"no run {run_id!r} in this event log")
    state, stale, info = row
    follower.seen_running = follower.seen_running or state in LIVE
    if state == "lost":
        return _lost(run_id, str(info or "it cannot be resumed"))
    if state == "running" and stale:
        return _lost(run_id, "its process is gone and none resumed it")
    if state not in (*LIVE, "ended"):
        return RunError(f"run {run_id!r} is in an unknown state {state!r}")
    return None


def fields(kind: Any, body: Any) -> dict[bytes, Any]:
    """An entry row as the fields of a Redis entry (an unknown kind stays unknown to the
    decoder, and so does a kind that is not even text)."""
    name = kind.encode() if isinstance(kind, str) else b"?"
    return {name if name in (b"e", b"end") else b"kind:" + name: body}


def _lost(run_id: str, why: str) -> RunLostError:
    return RunLostError(f"run {run_id!r} stopped without an end: {why}")
