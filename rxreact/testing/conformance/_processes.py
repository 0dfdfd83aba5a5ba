"""The event log contract across real processes: an owner killed with SIGKILL (inside a tool
that must never run twice, or while its run is parked on an approval), and the run finished
by another process. Subclass :class:`EventLogProcessConformance` and give it ``log_place``.

``log_place`` is ``(factory, place)``: ``factory`` names a callable as ``module:callable``
that a new Python process can import (its ``sys.path`` is this one's), called as
``callable(place, **options)`` to open a log on the store under test, e.g.
``("rxreact:SQLiteEventLog", "/tmp/runs.db")``. Each test's store must start empty.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rxreact.agent.react_agent import ReactAgent
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing.conformance._child import calls, make_tools, open_log
from rxreact.testing.conformance._event_log import Collected, wait_until
from rxreact.testing.mock_server import MockOpenAIServer

__all__ = ["EventLogProcessConformance"]


class _World:
    """The model server, the counts, the owner process and the logs opened here."""

    def __init__(self, log_place: tuple[str, str], script: list[Any], counts: Path) -> None:
        self.factory, self.place = log_place
        self.counts = counts
        self.server = MockOpenAIServer(script).start()
        self.logs: list[Any] = []
        self.models: list[OpenAIChatModel] = []
        self.owner: subprocess.Popen[str] | None = None

    def log(self, **options: Any) -> Any:
        options.setdefault("lost_after", 0.6)
        self.logs.append(open_log(self.factory, self.place, **options))
        return self.logs[-1]

    def agent(self) -> ReactAgent:
        model = OpenAIChatModel(
            "mock", base_url=self.server.base_url, api_key="sk-test", max_retries=0
        )
        self.models.append(model)
        return ReactAgent(model, make_tools(self.counts, hang=False), event_log=self.log())

    def start_owner(self, mode: str) -> str:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.owner = subprocess.Popen(
            [
                *(sys.executable, "-m", "rxreact.testing.conformance._child", mode),
                *(self.factory, self.place, self.server.base_url, str(self.counts)),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.owner.stdout is not None
        run_id = self.owner.stdout.readline().strip()
        assert run_id, f"the owner did not start: {self.owner.communicate(timeout=30)[1]}"
        return run_id

    def kill_owner(self) -> None:
        assert self.owner is not None
        self.owner.send_signal(signal.SIGKILL)  # no end marker, no more beats, nothing flushed
        self.owner.communicate(timeout=30)

    def resume_one(self, agent: ReactAgent) -> Any:
        resumed: list[Any] = []

        def any_resumed() -> bool:
            resumed.extend(agent.resume_runs())
            return bool(resumed)

        assert wait_until(any_resumed, 30)
        assert len(resumed) == 1
        return resumed[0]

    def close(self) -> None:
        if self.owner is not None and self.owner.poll() is None:
            self.kill_owner()
        for log in self.logs:
            log.close()
        for model in self.models:
            model.close()
        self.server.stop()


class EventLogProcessConformance:
    """Kill tests every durable event log must pass; subclass it as ``TestSomething`` and
    define the fixture ``log_place``."""

    @pytest.fixture
    def world(self, log_place: tuple[str, str], tmp_path: Path) -> Iterator[Any]:
        made: list[_World] = []

        def make(script: list[Any]) -> _World:
            made.append(_World(log_place, script, tmp_path))
            return made[-1]

        yield make
        for each in made:
            each.close()

    def test_an_owner_killed_inside_a_tool_the_run_ends_elsewhere_and_it_never_runs_twice(
        self, world: Any
    ) -> None:
        w = world(
            [
                tool_call_reply(("charge", {"amount": 5}), ("lookup", {"city": "Paris"})),
                text_reply("Charged, and Paris is sunny.", size=4),
            ]
        )
        run_id = w.start_owner("tool")
        follower = Collected(w.log(takeover_timeout=60).read(run_id))  # attached before
        assert wait_until(lambda: calls(w.counts, "charge") == 1, 30)
        w.kill_owner()
        run = w.resume_one(w.agent())
        assert run.result(timeout=30).answer == "Charged, and Paris is sunny."
        assert calls(w.counts, "charge") == 1  # may have run: never run again
        followed = follower.wait(30)
        assert followed.error is None and followed.events[-1].type == "final_answer"
        assert followed.seqs == list(range(1, len(followed.seqs) + 1))

    def test_an_owner_killed_while_parked_a_decision_from_elsewhere_finishes_the_run(
        self, world: Any
    ) -> None:
        w = world([tool_call_reply(("pay", {"amount": 3})), text_reply("Paid.")])
        run_id = w.start_owner("park")
        w.kill_owner()
        decider = w.log(lost_after=30)
        events = Collected(decider.read(run_id))
        assert wait_until(lambda: any(e.type == "tool_approval_requested" for e in events.events))
        call_id = next(e.call_id for e in events.events if e.type == "tool_approval_requested")
        decider.decide(run_id, call_id, True)  # no process owns the run now
        run = w.resume_one(w.agent())
        assert run.result(timeout=30).answer == "Paid."
        assert calls(w.counts, "pay") == 1
        assert events.wait(30).error is None  # parked, never lost: its follower saw the end
