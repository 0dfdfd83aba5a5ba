"""Approval decisions from any process: ``event_log.decide`` on a run another process owns
(real OS processes, a real SQLite file, redis-server and postgres); the first decision is applied
once, a second one, one for an unknown call or for an ended run is an
ApprovalDecisionError."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_logs import open_log, postgres_place
from test_runs_redis import last_json

from rxreact import ApprovalDecisionError, SQLiteEventLog, follow
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

CHILD = Path(__file__).with_name("approval_child.py")


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """Where the log is (a file, a Redis URL, a Postgres place), and a log on it here."""
    where = str(tmp_path / "runs.db")
    if request.param == "postgres":
        where = postgres_place(request.getfixturevalue("postgres_server"))
    if request.param == "redis":
        import redis

        where = request.getfixturevalue("redis_server").url
        with redis.Redis.from_url(where) as client:
            client.flushdb()
    log = open_log(where)
    yield where, log
    log.close()


def start_owner(where: str, server: MockOpenAIServer, count_file: Path) -> tuple[Any, str]:
    owner = subprocess.Popen(
        [sys.executable, str(CHILD), where, server.base_url, str(count_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    return owner, owner.stdout.readline().strip()


def asked(log: Any, run_id: str) -> str:
    """Wait for the run's approval request; its call id."""
    request: list[Any] = []
    seen = threading.Event()

    def on_next(event: Any) -> None:
        if event.type == "tool_approval_requested":
            request.append(event)
            seen.set()

    subscription = follow(run_id, log).subscribe(on_next)
    assert seen.wait(15)
    subscription.dispose()
    return str(request[0].call_id)


@pytest.mark.parametrize("approved", [True, False])
def test_a_decision_from_another_process_is_applied_once(
    place: tuple[str, Any], tmp_path: Path, approved: bool
) -> None:
    script = [tool_call_reply(("pay", {"amount": 3})), text_reply("Done.")]
    with MockOpenAIServer(script) as server:
        where, log = place
        count_file = tmp_path / "paid"
        owner, run_id = start_owner(where, server, count_file)
        call_id = asked(log, run_id)
        with pytest.raises(ApprovalDecisionError, match="no such call"):
            log.decide(run_id, "call_nope", True)

        log.decide(run_id, call_id, approved, None if approved else "over budget")

        with pytest.raises(ApprovalDecisionError, match=r"decided already|settled|ended"):
            log.decide(run_id, call_id, not approved)
        result = last_json(owner)
        assert result == {"outcome": "Done.", "paid": 1 if approved else 0}
        tool_message = server.requests[1]["messages"][-1]
        assert ("paid 3" in str(tool_message)) is approved
        if not approved:
            assert "over budget" in str(tool_message)
        with pytest.raises(ApprovalDecisionError, match="ended"):
            log.decide(run_id, call_id, True)


def test_a_server_worker_decides_for_a_run_another_worker_owns(tmp_path: Path) -> None:
    from rxreact import OpenAIChatModel, ReactAgent, tool
    from rxreact.serve._runs import RunRegistry

    paid = threading.Event()

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays."""
        paid.set()
        return f"paid {amount}"

    script = [tool_call_reply(("pay", {"amount": 3})), text_reply("Done.")]
    with (
        MockOpenAIServer(script) as server,
        SQLiteEventLog(tmp_path / "runs.db") as first_log,
        SQLiteEventLog(tmp_path / "runs.db") as second_log,
        OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test") as model,
    ):
        first = RunRegistry(ReactAgent(model, [pay], event_log=first_log))
        second = RunRegistry(ReactAgent(model, [pay], event_log=second_log))
        run = first.start("Pay 3.", "c1")
        call_id = asked(second_log, run.id)
        assert not second.decide(run.id, "call_nope", True, None)  # unknown: 404 upstream
        assert second.decide(run.id, call_id, True, None)  # the other worker's run
        assert run.result(timeout=15).answer == "Done." and paid.is_set()
        assert not second.decide(run.id, call_id, True, None)  # late
