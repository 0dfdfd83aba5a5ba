"""Workers for tests/test_parking.py: one parks a run, one resumes parked runs.

``python parking_child.py park LOG MODEL_URL COUNT_FILE [APPROVAL_TIMEOUT]``: start a run
whose ``pay`` tool needs approval, wait until it is parked and the park is written, print the
run id and ``run.parked``, then wait to be killed (SIGKILL: nothing is flushed or closed).

``python parking_child.py resume LOG MODEL_URL COUNT_FILE RUN_ID``: keep resuming lost and
parked runs (``agent.runs_keeper()``) until run RUN_ID ends; print one JSON line: its answer
(or the error's type), how often ``pay`` ran, and the event types after the approval request.

LOG is a SQLiteEventLog file, a Redis URL or a Postgres place (tests/durable_logs.py); each
uses ``lost_after=1``.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

from durable_logs import open_log as open_durable_log

from rxreact import OpenAIChatModel, ReactAgent, follow, tool

LOST_AFTER = 1.0


def make_agent(log: Any, model_url: str, count_file: str, timeout: float | None) -> ReactAgent:
    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays (a person approves it first)."""
        with open(count_file, "a") as calls:
            calls.write("paid\n")
        return f"paid {amount}"

    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0)
    return ReactAgent(model, [pay], event_log=log, approval_timeout=timeout)


def open_log(where: str) -> Any:
    return open_durable_log(where, lost_after=LOST_AFTER)


def park(where: str, model_url: str, count_file: str, timeout: str = "") -> None:
    log = open_log(where)
    agent = make_agent(log, model_url, count_file, float(timeout) if timeout else None)
    run = agent.start("Pay 3.", conversation_id=None)
    asked = threading.Event()
    run.events().subscribe(lambda e: asked.set() if e.type == "tool_approval_requested" else None)
    assert asked.wait(30)
    # The park is queued before the request reaches any subscriber: flushing writes it.
    assert log.flush(10)
    print(run.id, run.parked, flush=True)
    threading.Event().wait(120)  # until the parent kills this process


def resume(where: str, model_url: str, count_file: str, run_id: str) -> None:
    log = open_log(where)
    agent = make_agent(log, model_url, count_file, None)
    seen: list[str] = []
    done = threading.Event()
    outcome: list[str] = []

    def on_error(error: Exception) -> None:
        outcome.append(type(error).__name__)
        done.set()

    with log, agent.runs_keeper():
        follow(run_id, log).subscribe(
            lambda e: seen.append(e.type) or (e.type == "final_answer" and outcome.append(e.text)),
            on_error,
            done.set,
        )
        assert done.wait(60)
    paid = Path(count_file).read_text().count("paid") if Path(count_file).exists() else 0
    after = (
        seen[seen.index("tool_approval_requested") + 1 :]
        if "tool_approval_requested" in seen
        else seen
    )
    print(json.dumps({"outcome": outcome[0], "paid": paid, "after": after}), flush=True)


if __name__ == "__main__":
    {"park": park, "resume": resume}[sys.argv[1]](*sys.argv[2:])
