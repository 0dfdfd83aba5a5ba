"""The many-workers benchmark's kill pass: one worker SIGKILLed mid-load, and what the
client, the tool log and the stored conversations say about every run afterwards."""

from __future__ import annotations

import collections
import json
import statistics
from typing import Any

from benchmarks._worker_backends import Backend
from benchmarks._worker_client import Load, run_load
from benchmarks._worker_fleet import Fleet


def first_errors(load: Load) -> list[str]:
    return [f"{run.conversation}: {run.errors[0]}" for run in load.runs if run.errors][:3]


def _histories_not_once(backend: Backend, load: Load) -> list[str]:
    """The conversations whose stored history is not one question and one final answer."""
    from rxreact.messages import AssistantMessage, UserMessage

    memory = backend.memory()
    odd = []
    try:
        for run in load.runs:
            history = memory.load(run.conversation)
            questions = sum(type(m) is UserMessage for m in history)
            answers = sum(type(m) is AssistantMessage and not m.tool_calls for m in history)
            if (questions, answers) != (1, 1):
                odd.append(f"{run.conversation}: {questions} questions, {answers} answers")
    finally:
        memory.close()
    return odd


def _histories(backend: Backend, load: Load) -> dict[str, Any]:
    odd = _histories_not_once(backend, load)
    return {"histories_not_once": len(odd), "history_examples": odd[:3]}


def kill_pass(
    fleet: Fleet,
    backend: Backend,
    runs: int,
    concurrency: int,
    chunks: int,
    kill_after: float = 0.5,
) -> dict[str, Any]:
    """The kill pass: one worker SIGKILLed once ``kill_after`` of the runs have finished
    (``0``: when the first answer begins)."""
    before = len(fleet.tool_calls())
    victim = fleet.workers[0]
    kill_at = round(runs * kill_after)
    load = run_load(fleet.urls, runs, concurrency, kill_at=kill_at, kill=victim.kill, tag="k")
    calls = fleet.tool_calls()[before:]
    conversation_of = {rid: run.conversation for run in load.runs for rid in run.run_ids}
    executions = collections.Counter(
        (conversation_of.get(rid, f"?{rid}"), rnd, city) for rid, rnd, city, _pid in calls
    )
    twice = {key: n for key, n in executions.items() if n > 1}
    finals = collections.Counter(run.finals for run in load.runs)
    taken = [run for run in load.runs if run.broken]
    recovery = [run.recovered - load.killed_at for run in taken if run.recovered and load.killed_at]
    resent = [run for run in load.runs if run.resent]
    return {
        "runs": runs,
        "correct_once": sum(run.correct(chunks) for run in load.runs),
        "finals": dict(sorted(finals.items())),
        "wrong": [f"{r.conversation}: {r.wrong(chunks)}" for r in load.runs if r.wrong(chunks)][:3],
        "wrong_texts": [r.text() for r in load.runs if r.finals == 1 and r.wrong(chunks)],
        "lost": sum(1 for run in load.runs if run.finals == 0),
        "aborted": sum(1 for run in load.runs if run.aborted),
        "aborted_went_on": sum(1 for run in load.runs if run.aborted and run.finals == 1),
        "seen_twice": [r.conversation for r in load.runs if r.finals > 1][:5],
        "lost_trails": [
            {
                "conversation": r.conversation,
                "run_ids": r.run_ids,
                "posts": r.posts,
                "broken": r.broken,
                "parts": r.trail[-6:],
            }
            for r in load.runs
            if r.finals == 0
        ][:3],
        "twice_trails": [
            {"parts": run.trail[-5:], "replayed": _replayed(fleet, run.run_id)}
            for run in load.runs
            if run.finals > 1 and run.run_id
        ][:3],
        "wall_s": load.wall_s,
        "broken_runs": len(taken),
        "resent": len(resent),
        "resent_with_tool_runs": sum(
            1 for run in resent if any(rid in {c[0] for c in calls} for rid in run.run_ids[:-1])
        ),
        "recover_p50_s": statistics.median(recovery) if recovery else float("nan"),
        "recover_max_s": max(recovery) if recovery else float("nan"),
        "tool_executions": len(calls),
        "calls_expected": 2 * runs,
        "calls_run_twice": len(twice),
        "twice_examples": [list(key) for key in list(twice)[:3]],
        "errors": first_errors(load),
        **_histories(backend, load),
    }


def _replayed(fleet: Fleet, run_id: str) -> list[str]:
    """The run's parts from ``seq`` 1, as a new reader gets them from the log now (of a run
    the client saw finish twice: does the log hold two answers, or did the stream differ?)."""
    import httpx

    url = next(w.url for w in fleet.workers if w.alive)
    parts = []
    with httpx.stream("GET", f"{url}/api/runs/{run_id}/stream", timeout=30) as response:
        seq = "0"
        for line in response.iter_lines():
            if line.startswith("id: "):
                seq = line[4:]
            elif line.startswith("data: {"):
                kind = json.loads(line[6:]).get("type")
                if kind in ("finish", "data-round-restarted", "error", "start"):
                    parts.append(f"{seq}:{kind}")
    return parts
