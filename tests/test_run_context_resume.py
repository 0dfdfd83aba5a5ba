"""Deps of a resumed run: a worker holding a run given deps is killed (SIGKILL) inside its
tool; another resumes it with ``deps_factory`` (the tool runs again with the new deps), or,
without one, gives it up and none of its tools run there."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from deps_tools import Shop, ran, shop_tools
from test_takeover import wait_until

from rxreact import (
    OpenAIChatModel,
    ReactAgent,
    RunInfo,
    RunLostError,
    SQLiteEventLog,
    follow,
)
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.runs import AgentRun
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

CHILD = Path(__file__).with_name("deps_child.py")
LOST_AFTER = 0.6


class Lost:
    """A run given deps whose worker was killed mid-request, on a SQLite log."""

    def __init__(self, tmp_path: Path) -> None:
        self.server = MockOpenAIServer(
            [tool_call_reply(("whoami", {})), text_reply("You are bob.")]
        ).start()
        self.db = str(tmp_path / "runs.db")
        self.closing: list[Any] = []
        worker = subprocess.Popen(
            [sys.executable, str(CHILD), self.db, self.server.base_url, str(LOST_AFTER)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=str(CHILD.parent),
        )
        assert worker.stdout is not None
        self.run_id = worker.stdout.readline().strip()
        assert worker.stdout.readline().strip() == "in whoami for alice"
        worker.kill()
        worker.communicate(timeout=10)

    def agent(self, **options: Any) -> ReactAgent[Shop]:
        log = SQLiteEventLog(self.db, lost_after=LOST_AFTER)
        model = OpenAIChatModel("mock", base_url=self.server.base_url, api_key="k", max_retries=0)
        self.closing += [log, model]
        return ReactAgent[Shop](
            model, shop_tools(), event_log=log, deps_type=Shop, name="shop", **options
        )

    def close(self) -> None:
        for each in self.closing:
            each.close()
        self.server.stop()


@pytest.fixture
def lost(tmp_path: Path) -> Iterator[Lost]:
    ran.clear()
    made = Lost(tmp_path)
    yield made
    made.close()


def test_a_resumed_run_gets_its_deps_from_the_factory(lost: Lost) -> None:
    infos: list[RunInfo] = []

    def factory(info: RunInfo) -> Shop:
        infos.append(info)
        return Shop("bob")

    agent = lost.agent(deps_factory=factory)
    resumed: list[AgentRun] = []
    assert wait_until(lambda: bool(resumed.extend(agent.resume_runs()) or resumed))
    assert resumed[0].result(timeout=20).answer == "You are bob."
    assert infos == [RunInfo(lost.run_id, "c1", "shop", None)]
    assert ran == ["bob"]


def test_resumed_without_a_factory_the_run_ends_with_a_clear_error_and_no_tool_runs(
    lost: Lost,
) -> None:
    agent = lost.agent()
    assert wait_until(lambda: agent.resume_runs() == [] and _given_up(lost))
    reader = SQLiteEventLog(lost.db)
    lost.closing.append(reader)
    with pytest.raises(RunLostError, match="deps_factory"):
        follow(lost.run_id, reader).run()
    assert ran == []
    assert len(lost.server.requests) == 1  # nothing asked the model again


def _given_up(lost: Lost) -> bool:
    import sqlite3

    with sqlite3.connect(lost.db) as db:
        row = db.execute("SELECT state FROM runs WHERE run_id = ?", (lost.run_id,)).fetchone()
    return row is not None and row[0] != "running"
