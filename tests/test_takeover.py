"""Takeover on durable event logs (a SQLite file, a real redis-server, a real postgres): a
worker is killed (SIGKILL) mid-run, another resumes the run from its checkpoints; followers
keep following; nothing finished is done again; a tool that is not idempotent never runs
twice; exactly one of two racing workers wins; runs that cannot be resumed are given up with
the reason."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_logs import is_postgres, open_log, open_memory, postgres_place, split_place
from takeover_child import calls, make_tools
from test_runs import Collector

from rxreact import (
    ConversationBusyError,
    OpenAIChatModel,
    PostgresEventLog,
    ReactAgent,
    RedisEventLog,
    RunLostError,
    SQLiteEventLog,
    follow,
    tool,
)
from rxreact.agent.resume import MAY_HAVE_RUN
from rxreact.memory import Lease
from rxreact.messages import UserMessage
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply
from rxreact.runs import AgentRun
from rxreact.testing import MockOpenAIServer
from rxreact.testing.conformance._event_log import wait_until

CHILD = Path(__file__).with_name("takeover_child.py")
LOST_AFTER = 0.6


class World:
    """A model server, a durable log's place (SQLite file or Redis URL), a count directory,
    and the logs made on them."""

    def __init__(self, tmp_path: Path, script: list[Any], url: str | None) -> None:
        self.server = MockOpenAIServer(script).start()
        self.db = url or str(tmp_path / "runs.db")
        self.redis = url is not None and url.startswith("redis://")
        self.postgres = url is not None and is_postgres(url)
        self.counts = tmp_path
        self.logs: list[SQLiteEventLog | RedisEventLog | PostgresEventLog] = []
        self.models: list[OpenAIChatModel] = []
        self.children: list[subprocess.Popen[str]] = []

    def log(self, **options: Any) -> SQLiteEventLog | RedisEventLog | PostgresEventLog:
        options.setdefault("lost_after", LOST_AFTER)
        made = open_log(self.db, **options)
        self.logs.append(made)
        return made

    # What the log holds about a run, read as another process would.

    def sql(self, statement: str, *args: Any) -> Any:
        """The first row of ``statement`` (``{p}``: the tables' prefix) on the Postgres place."""
        import psycopg

        dsn, prefix = split_place(self.db)
        with psycopg.connect(dsn, autocommit=True) as conn:
            return conn.execute(statement.format(p=prefix), args).fetchone()

    def memory_place(self, tmp_path: Path) -> str:
        """Where the conversation memory goes: a SQLite file, or Postgres tables by the log's."""
        if self.postgres:
            return self.db.replace("#", "#m")
        return str(tmp_path / "memory.db")

    def lease(self, run_id: str) -> tuple[int, str]:
        """The run's fencing token and state."""
        if self.postgres:
            token, state = self.sql("SELECT token, state FROM {p}runs WHERE run_id = %s", run_id)
            return int(token), str(state)
        if self.redis:
            import redis

            with redis.Redis.from_url(self.db) as client:
                token, state = client.hmget(f"rxreact:run:{run_id}:owner", ["token", "state"])
            return int(token), state.decode()
        with sqlite3.connect(self.db) as db:
            row = db.execute("SELECT token, state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0]), str(row[1])

    def is_lost(self, run_id: str) -> bool:
        """The owner's beat is older than LOST_AFTER (what a claim looks for)."""
        if self.postgres:
            row = self.sql(
                "SELECT lapse < clock_timestamp() FROM {p}runs WHERE run_id = %s", run_id
            )
            return row is not None and bool(row[0])
        if self.redis:
            import redis

            with redis.Redis.from_url(self.db) as client:
                return not client.exists(f"rxreact:run:{run_id}:meta")
        with sqlite3.connect(self.db) as db:
            row = db.execute("SELECT beat FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return row is not None and row[0] < time.time() - LOST_AFTER

    def corrupt(self, run_id: str, n: int) -> None:
        """Overwrite checkpoint ``n`` of the run with JSON that is no checkpoint."""
        bad = '{"kind": 7}'
        if self.postgres:
            self.sql(
                "UPDATE {p}checkpoints SET body = %s WHERE run_id = %s AND n = %s RETURNING n",
                bad.encode(),
                run_id,
                n,
            )
            return
        if self.redis:
            import redis

            with redis.Redis.from_url(self.db) as client:
                client.hset(f"rxreact:run:{run_id}:ckpt", str(n), bad)
            return
        with sqlite3.connect(self.db) as db:
            db.execute(
                "UPDATE checkpoints SET body = ? WHERE run_id = ? AND n = ?", (bad, run_id, n)
            )

    def agent(self, tools: list[Any] | None = None, **agent_options: Any) -> ReactAgent:
        model = OpenAIChatModel(
            "mock", base_url=self.server.base_url, api_key="sk-test", max_retries=0
        )
        self.models.append(model)
        chosen = make_tools(self.counts, hang=False) if tools is None else tools
        return ReactAgent(model, chosen, event_log=self.log(), **agent_options)

    def start_worker(
        self, memory: str = "", lease_ttl: float = 1.0
    ) -> tuple[subprocess.Popen[str], str]:
        worker = subprocess.Popen(
            [
                sys.executable,
                str(CHILD),
                self.db,
                self.server.base_url,
                str(self.counts),
                str(LOST_AFTER),
                *([memory, str(lease_ttl)] if memory else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.children.append(worker)
        assert worker.stdout is not None
        return worker, worker.stdout.readline().strip()

    def close(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=10)
        for log in self.logs:
            log.close()
        for model in self.models:
            model.close()
        self.server.stop()


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[list[Any]], World]]:
    url: str | None = None
    if request.param == "postgres":
        url = postgres_place(request.getfixturevalue("postgres_server"))
    if request.param == "redis":
        import redis

        url = request.getfixturevalue("redis_server").url
        with redis.Redis.from_url(url) as client:
            client.flushdb()
    made: list[World] = []

    def make(script: list[Any]) -> World:
        made.append(World(tmp_path, script, url))
        return made[-1]

    yield make
    for each in made:
        each.close()


def kill(worker: subprocess.Popen[str]) -> None:
    worker.kill()  # SIGKILL: no end marker, no more heartbeats, nothing flushed
    worker.communicate(timeout=10)


def resume_one(agent: ReactAgent) -> AgentRun:
    resumed: list[AgentRun] = []
    assert wait_until(lambda: bool(resumed.extend(agent.resume_runs()) or resumed))
    assert len(resumed) == 1
    return resumed[0]


def test_killed_inside_a_tool_the_run_finishes_elsewhere_and_the_tool_never_runs_twice(
    world: Callable[[list[Any]], World],
) -> None:
    w = world(
        [
            tool_call_reply(("charge", {"amount": 5}), ("lookup", {"city": "Paris"})),
            text_reply("Charged, and Paris is sunny.", size=4),
        ]
    )
    worker, run_id = w.start_worker()
    watcher = Collector(follow(run_id, w.log(takeover_timeout=30)))  # attached before the kill
    assert wait_until(lambda: calls(w.counts, "charge") == 1 and calls(w.counts, "lookup") == 1)
    kill(worker)

    run = resume_one(w.agent())
    result = run.result(timeout=15)

    assert result.answer == "Charged, and Paris is sunny."
    assert calls(w.counts, "charge") == 1  # never run twice
    assert calls(w.counts, "lookup") in (1, 2)  # idempotent: run again only if unrecorded
    second = w.server.requests[1]["messages"]
    charged = [m for m in second if m["role"] == "tool" and MAY_HAVE_RUN in str(m["content"])]
    assert len(charged) == 1  # the model reads that the charge may or may not have happened
    events = watcher.wait().events
    assert watcher.error is None
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[-1].type == "final_answer"
    assert [e.call_id for e in events if e.type == "tool_result"].count(
        result.messages[1].tool_calls[0].id  # type: ignore[union-attr]
    ) == 1
    assert len(w.server.requests) == 2  # the finished first response was not requested again


def test_killed_while_streaming_the_round_restarts_and_followers_see_one_stream(
    world: Callable[[list[Any]], World],
) -> None:
    w = world(
        [
            tool_call_reply(("lookup", {"city": "Paris"})),
            [*text_reply("Half an ans", size=3)[:3], Hang()],
            text_reply("Paris is sunny.", size=3),
        ]
    )
    worker, run_id = w.start_worker()
    reader = w.log(takeover_timeout=30)
    streaming = threading.Event()
    watcher = Collector(follow(run_id, reader))
    follow(run_id, reader).subscribe(
        lambda e: e.type == "text_delta" and e.round == 2 and streaming.set()
    )
    assert streaming.wait(15)
    kill(worker)

    run = resume_one(w.agent())
    assert run.result(timeout=15).answer == "Paris is sunny."

    events = watcher.wait().events
    assert watcher.error is None
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    kinds = [e.type for e in events]
    restart = kinds.index("round_restarted")
    assert events[restart].round == 2 and "stopped" in events[restart].reason
    assert "text_delta" in kinds[:restart]  # the withdrawn text came before
    after = "".join(e.delta for e in events[restart:] if e.type == "text_delta")
    assert after == "Paris is sunny."
    assert kinds[-1] == "final_answer"
    assert calls(w.counts, "lookup") == 1  # its result was recorded: not run again
    assert len(w.server.requests) == 3
    # A subscriber of the resumed run in this process replays the whole run too.
    assert [e.seq for e in Collector(run.events()).wait().events] == [e.seq for e in events]


def test_two_workers_racing_for_a_lost_run_exactly_one_wins(
    world: Callable[[list[Any]], World],
) -> None:
    w = world(
        [
            tool_call_reply(("charge", {"amount": 1})),
            text_reply("done"),
            text_reply("done"),
        ]
    )
    worker, run_id = w.start_worker()
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    kill(worker)
    agents = [w.agent(), w.agent()]
    won: list[list[AgentRun]] = [[], []]
    assert wait_until(lambda: w.is_lost(run_id))
    start = threading.Barrier(2)

    def race(i: int) -> None:
        start.wait(10)
        won[i] = agents[i].resume_runs()

    threads = [threading.Thread(target=race, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(15)
    assert sorted(len(runs) for runs in won) == [0, 1]
    (winner,) = won[0] + won[1]
    assert winner.result(timeout=15).answer == "done"
    assert all(log.flush() for log in w.logs)
    assert w.lease(run_id) == (2, "ended")


def test_an_agent_with_other_tools_refuses_the_run_and_its_followers_learn_why(
    world: Callable[[list[Any]], World],
) -> None:
    w = world([tool_call_reply(("charge", {"amount": 1})), text_reply("done")])
    worker, run_id = w.start_worker()
    watcher = Collector(follow(run_id, w.log(takeover_timeout=30)))
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    kill(worker)

    @tool
    def charge(amount: int) -> str:
        """Another charge tool, without lookup."""
        return "no"

    other = w.agent([charge])
    assert wait_until(lambda: w.is_lost(run_id))
    assert other.resume_runs() == []
    error = watcher.wait().error
    assert isinstance(error, RunLostError)
    assert "tools" in str(error) and "lookup" in str(error)
    assert w.agent().resume_runs() == []  # given up for good: nobody claims it again
    assert calls(w.counts, "charge") == 1


def test_a_corrupt_checkpoint_gives_the_run_up_and_leaves_others_alone(
    world: Callable[[list[Any]], World],
) -> None:
    w = world(
        [
            tool_call_reply(("charge", {"amount": 1})),
            tool_call_reply(("charge", {"amount": 2})),
            text_reply("second done"),
        ]
    )
    first, first_id = w.start_worker()
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    second, second_id = w.start_worker()
    assert wait_until(lambda: calls(w.counts, "charge") == 2)
    kill(first)
    kill(second)
    w.corrupt(first_id, 1)
    watcher = Collector(follow(first_id, w.log(takeover_timeout=30)))
    agent = w.agent()
    resumed: list[AgentRun] = []

    def both_claimed() -> bool:
        resumed.extend(agent.resume_runs())
        return bool(resumed) and w.lease(first_id)[1] == "lost"

    assert wait_until(both_claimed)
    assert [r.id for r in resumed] == [second_id]
    assert resumed[0].result(timeout=15).answer == "second done"
    error = watcher.wait().error
    assert isinstance(error, RunLostError) and "corrupt" in str(error)


def test_a_runs_keeper_resumes_lost_runs_in_the_background(
    world: Callable[[list[Any]], World],
) -> None:
    w = world(
        [
            tool_call_reply(("lookup", {"city": "Oslo"})),
            [*text_reply("Os", size=1)[:2], Hang()],  # the worker never finishes round 2
            text_reply("Oslo: sunny."),
        ]
    )
    worker, run_id = w.start_worker()
    assert wait_until(lambda: len(w.server.requests) == 2)  # round 1 is done
    kill(worker)
    with w.agent().runs_keeper(interval=0.1) as keeper:
        assert wait_until(lambda: bool(keeper.resumed))
        (run,) = keeper.resumed
        assert run.id == run_id
        assert run.result(timeout=15).answer == "Oslo: sunny."


def test_a_resumed_conversation_run_commits_its_turn_once(
    world: Callable[[list[Any]], World], tmp_path: Path
) -> None:
    w = world(
        [
            tool_call_reply(("charge", {"amount": 5}), ("lookup", {"city": "Paris"})),
            text_reply("Charged, and Paris is sunny."),
        ]
    )
    memory_path = w.memory_place(tmp_path)
    worker, _ = w.start_worker(memory_path)
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    kill(worker)  # it holds the conversation's lease (one second, never renewed again)

    memory = open_memory(memory_path)
    run = resume_one(w.agent(memory=memory, lease_ttl=1.0))
    assert run.result(timeout=15).answer == "Charged, and Paris is sunny."

    history = memory.load("c1")
    assert [m.role for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    assert history[0].content == "Charge 5 and look Paris up."
    assert history[-1].content == "Charged, and Paris is sunny."
    assert calls(w.counts, "charge") == 1
    memory.close()


def test_a_resumed_run_takes_the_conversation_lease_over_at_once(
    world: Callable[[list[Any]], World], tmp_path: Path
) -> None:
    w = world(
        [
            tool_call_reply(("charge", {"amount": 5}), ("lookup", {"city": "Paris"})),
            text_reply("Charged, and Paris is sunny."),
        ]
    )
    memory_path = w.memory_place(tmp_path)
    worker, _ = w.start_worker(memory_path, lease_ttl=3600)
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    kill(worker)  # its conversation lease would last an hour: the resumed run does not wait
    if w.postgres:
        owner, token = w.sql("SELECT owner, token FROM m{p}leases")
    else:
        with sqlite3.connect(memory_path) as db:
            owner, token = db.execute("SELECT owner, token FROM leases").fetchone()
    old = Lease(conversation_id="c1", owner=owner, token=token, ttl=3600)

    memory = open_memory(memory_path)
    run = resume_one(w.agent(memory=memory, lease_ttl=3600))
    assert run.result(timeout=15).answer == "Charged, and Paris is sunny."

    assert [m.role for m in memory.load("c1")] == ["user", "assistant", "tool", "tool", "assistant"]
    # Had the old owner only been paused, its commit would now be refused, and its renewals.
    with pytest.raises(ConversationBusyError):
        memory.append("c1", [UserMessage(content="late")], lease=old)
    assert memory.renew(old) is False
    assert len(memory.load("c1")) == 5
    memory.close()


def test_an_agent_with_another_name_refuses_the_run(world: Callable[[list[Any]], World]) -> None:
    w = world([tool_call_reply(("charge", {"amount": 1})), text_reply("done")])
    worker, run_id = w.start_worker()
    watcher = Collector(follow(run_id, w.log(takeover_timeout=30)))
    assert wait_until(lambda: calls(w.counts, "charge") == 1)
    kill(worker)
    assert wait_until(lambda: w.is_lost(run_id))
    assert w.agent(name="billing").resume_runs() == []  # same tools, another agent
    error = watcher.wait().error
    assert isinstance(error, RunLostError) and "'billing'" in str(error)
    assert w.lease(run_id)[1] == "lost"
