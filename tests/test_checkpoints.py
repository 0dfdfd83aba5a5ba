"""Checkpoints on durable logs (SQLite files, a real redis-server): one per finished step,
written before the step that depends on it, never seen by subscribers, ``seq`` untouched."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer
from test_runs import Collector

from rxreact import (
    InMemoryEventLog,
    ReactAgent,
    RedisEventLog,
    RunError,
    SQLiteEventLog,
    follow,
    tool,
)
from rxreact.messages import AssistantMessage, ChatRequest, ToolMessage, UserMessage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.runs.checkpoints import Checkpoint, decode_checkpoint, encode_checkpoint

ReadCheckpoints = Callable[[str], list[Checkpoint]]


@pytest.fixture(params=["sqlite", "redis"])
def durable(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Any, ReadCheckpoints]]:
    """A durable log, and a way to read a run's checkpoints as another process would."""
    if request.param == "sqlite":
        path = tmp_path / "runs.db"
        with SQLiteEventLog(path) as log:

            def read_sqlite(run_id: str) -> list[Checkpoint]:
                with sqlite3.connect(path) as db:
                    rows = db.execute(
                        "SELECT n, body FROM checkpoints WHERE run_id = ? ORDER BY n", (run_id,)
                    ).fetchall()
                return [decode_checkpoint(body, f"{run_id}/{n}") for n, body in rows]

            yield log, read_sqlite
        return
    import redis

    server: RedisServer = request.getfixturevalue("redis_server")
    with redis.Redis.from_url(server.url) as client:
        client.flushdb()
        with RedisEventLog(server.url) as log:

            def read_redis(run_id: str) -> list[Checkpoint]:
                fields = client.hgetall(f"rxreact:run:{run_id}:ckpt")
                return [
                    decode_checkpoint(fields[key], f"{run_id}/{key!r}")
                    for key in sorted(fields, key=int)
                ]

            yield log, read_redis


def test_each_step_is_recorded_before_the_step_that_depends_on_it(
    durable: tuple[Any, ReadCheckpoints],
) -> None:
    log, read = durable
    seen_by_tool: list[list[str]] = []
    seen_by_model: list[list[str]] = []
    run_id: list[str] = []

    @tool
    def lookup(city: str) -> str:
        """Looks a city up."""
        seen_by_tool.append([c.kind for c in read(run_id[0])])
        return f"{city}: sunny"

    def script(request: ChatRequest) -> Reply:
        if len(request.messages) == 1:
            return tool_call_reply(("lookup", {"city": "Paris"}), ("lookup", {"city": "Rome"}))
        seen_by_model.append([c.kind for c in read(run_id[0])])
        return text_reply("Both sunny.")

    agent = ReactAgent(ScriptedModel(script), [lookup], event_log=log)
    run = agent.start("Weather?", conversation_id="c1")
    run_id.append(run.id)
    events = Collector(run.events()).wait().events
    assert run.result(timeout=10).answer == "Both sunny."
    assert log.flush()

    # The tools ran after the response that asked for them was committed, and the second
    # request was made after both results were.
    assert len(seen_by_tool) == 2
    assert all(seen[:2] == ["start", "response"] for seen in seen_by_tool)
    assert seen_by_model == [["start", "response", "tool", "tool"]]
    checkpoints = read(run.id)
    assert [c.kind for c in checkpoints] == ["start", "response", "tool", "tool", "response"]
    start, asked, *results, answered = checkpoints
    assert start.messages == (UserMessage(content="Weather?"),)
    assert start.conversation_id == "c1" and start.tools == ("lookup",)
    assert isinstance(asked.messages[0], AssistantMessage) and asked.round == 1
    assert [c.name for c in asked.messages[0].tool_calls] == ["lookup", "lookup"]
    assert sorted(r.result.content for r in results if r.result) == ["Paris: sunny", "Rome: sunny"]
    assert isinstance(answered.messages[0], AssistantMessage) and answered.round == 2
    assert answered.messages[0].content == "Both sunny."
    # Subscribers never see a checkpoint, and seq is what it always was.
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    followed = Collector(follow(run.id, log)).wait().events
    assert followed == events
    assert not any(isinstance(e, Checkpoint) for e in followed)
    assert all(e.seq == 0 for c in checkpoints if c.result for e in [c.result])


def test_a_tool_message_rebuilds_from_its_checkpoint(durable: tuple[Any, ReadCheckpoints]) -> None:
    log, read = durable

    @tool
    def echo(text: str) -> str:
        """Echoes."""
        return text.upper()

    replies = iter([tool_call_reply(("echo", {"text": "hi"})), text_reply("HI")])
    agent = ReactAgent(ScriptedModel(lambda _: next(replies)), [echo], event_log=log)
    run = agent.start("q")
    messages = run.result(timeout=10).messages
    assert log.flush()
    (tool_checkpoint,) = [c for c in read(run.id) if c.kind == "tool"]
    assert tool_checkpoint.result is not None
    rebuilt = ToolMessage(
        tool_call_id=tool_checkpoint.result.call_id,
        content=tool_checkpoint.result.content,
        name=tool_checkpoint.result.name,
    )
    assert rebuilt in messages


def test_the_in_memory_log_and_cold_streams_write_no_checkpoints() -> None:
    agent = ReactAgent(ScriptedModel([text_reply("ok")]), event_log=InMemoryEventLog())
    run = agent.start("q")
    assert run._run.checkpoints is None
    assert run.result(timeout=10).answer == "ok"


def test_a_corrupt_checkpoint_is_a_run_error_naming_it() -> None:
    good = encode_checkpoint(Checkpoint(kind="start", messages=(UserMessage(content="q"),)))
    assert decode_checkpoint(good, "r/0").messages == (UserMessage(content="q"),)
    with pytest.raises(RunError, match="checkpoint r/1 is corrupt"):
        decode_checkpoint(b'{"kind": "nonsense"}', "r/1")
    with pytest.raises(RunError, match="checkpoint r/2 is corrupt"):
        decode_checkpoint(good[:-3], "r/2")


def test_a_run_fenced_out_of_its_log_stops_before_the_step_that_needed_the_record(
    tmp_path: Path,
) -> None:
    # Another process took the run over (its token moved on) while this one was paused: the
    # response checkpoint is refused, so the tools it asked for never run here.
    path = tmp_path / "runs.db"
    ran = threading.Event()

    @tool
    def charge(amount: int) -> str:
        """Charges."""
        ran.set()
        return "charged"

    def script(request: ChatRequest) -> Reply:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE runs SET token = token + 1, owner = 'another worker'")
        return tool_call_reply(("charge", {"amount": 1}))

    with SQLiteEventLog(path) as log:
        run = ReactAgent(ScriptedModel(script), [charge], event_log=log).start("q")
        with pytest.raises(RunError):
            run.result(timeout=10)
    assert not ran.is_set()


def test_a_run_handed_off_to_another_agent_is_not_resumed() -> None:
    from rxreact.agent._rebuild import Refused, rebuild
    from rxreact.runs.takeover import LostRun

    def body(checkpoint: Checkpoint) -> bytes:
        return encode_checkpoint(checkpoint)

    start = Checkpoint(kind="start", messages=(UserMessage(content="q"),), agent="triage")
    answered = Checkpoint(
        kind="response", round=1, messages=(AssistantMessage(content="hi"),), agent="billing"
    )
    lost = LostRun("r", None, 2, [("r/0", body(start)), ("r/1", body(answered))])
    with pytest.raises(Refused, match="handed off to agent 'billing'"):
        rebuild(lost, "triage", [])
    same = answered.model_copy(update={"agent": "triage"})
    rebuilt = rebuild(
        LostRun("r", None, 2, [("r/0", body(start)), ("r/1", body(same))]), "triage", []
    )
    assert rebuilt.last == AssistantMessage(content="hi") and rebuilt.rounds == 1
