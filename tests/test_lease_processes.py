"""One run per conversation across real OS processes: one SQLite file, one real redis-server,
a real three-master Redis Cluster, one real postgres.

Each run is a ``python lease_worker.py`` process talking to the loopback mock server; the mock
holds a run's model reply until the test lets it go, so the test decides who is mid-run when
the next process starts, is killed (``SIGKILL``) or is paused (``SIGSTOP``) past its ttl.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from durable_logs import open_memory as open_durable_memory
from durable_logs import postgres_place
from redis_cluster import LocalCluster
from redis_server import RedisServer

from rxreact import ChatRequest, RedisChatMemory, SQLiteChatMemory, UserMessage
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

WORKER = Path(__file__).with_name("lease_worker.py")
TTL = 1.5  # short, yet three renewals long: the host is shared and busy


@pytest.fixture(params=["sqlite", "redis", "redis_cluster", "postgres"])
def memory_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where the processes share their memory: ``sqlite:<file>``, ``redis:<url>``,
    ``redis-cluster:<a node's url>`` (a three-master cluster) or ``postgres:<place>``
    (tests/durable_logs.py)."""
    if request.param == "postgres":
        yield f"postgres:{postgres_place(request.getfixturevalue('postgres_server'))}"
        return
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'shared.db'}"
        return
    if request.param == "redis_cluster":
        cluster: LocalCluster = request.getfixturevalue("redis_cluster")
        cluster.flush()
        yield f"redis-cluster:{cluster.url}"
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    with RedisChatMemory(server.url) as memory:
        memory.clear()
    import redis

    with redis.Redis.from_url(server.url) as client:
        client.flushdb()
    yield f"redis:{server.url}"


def open_memory(spec: str) -> Any:
    kind, _, where = spec.partition(":")
    if kind == "postgres":
        return open_durable_memory(where)
    if kind == "sqlite":
        return SQLiteChatMemory(where)
    return RedisChatMemory(where, cluster=kind == "redis-cluster")


class Model:
    """The mock server's script: answers each question, holding the ones the test holds."""

    def __init__(self, *held: str) -> None:
        self.arrived = {q: threading.Event() for q in ("first?", "second?", "third?", "rejected?")}
        self.go = {q: threading.Event() for q in held}

    def __call__(self, request: ChatRequest) -> Any:
        question = [m.content for m in request.messages if isinstance(m, UserMessage)][-1]
        self.arrived[question].set()
        if question in self.go:
            self.go[question].wait(30)
        return text_reply(f"answer to {question}")

    def let_go(self) -> None:
        for event in self.go.values():
            event.set()


class Worker:
    """A run in its own process."""

    def __init__(self, spec: str, server: MockOpenAIServer, question: str, on_busy: str) -> None:
        settings = {
            "memory": spec,
            "base_url": server.base_url,
            "question": question,
            "on_busy": on_busy,
            "ttl": TTL,
        }
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(settings)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(WORKER.parent.parent)},
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        self.stdout, self.stdin = self.process.stdout, self.process.stdin

    def go(self) -> bool:
        """Start the run once the process is set up; True if the conversation was held then."""
        assert self.stdout.readline().strip() == "ready"
        self.stdin.write("go\n")
        self.stdin.flush()
        line = self.stdout.readline().strip()
        assert line in ("busy", "free"), line
        return line == "busy"

    def outcome(self, timeout: float = 30) -> dict[str, Any]:
        out, _ = self.process.communicate(timeout=timeout)
        lines = out.strip().splitlines()
        assert self.process.returncode == 0 and lines, out
        result: dict[str, Any] = json.loads(lines[-1])
        return result

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self.stdout.close()
        self.stdin.close()


@pytest.fixture
def cleanup() -> Iterator[list[Any]]:
    """Things to end however the test ends: workers to kill, models to let go."""
    items: list[Any] = []
    yield items
    for item in reversed(items):
        if isinstance(item, Worker):
            item.process.send_signal(signal.SIGCONT)
            item.kill()
        else:
            item.let_go()


def contents(spec: str) -> list[str | None]:
    memory = open_memory(spec)
    try:
        return [m.content for m in memory.load("c")]
    finally:
        memory.close()


def workers(
    spec: str, server: MockOpenAIServer, model: Model, cleanup: list[Any], *runs: tuple[str, str]
) -> list[Worker]:
    """Start a process per ``(question, on_busy)`` at once (their imports overlap), then let
    the first go and wait until its request is in: from then on it holds the conversation."""
    started = [Worker(spec, server, question, on_busy) for question, on_busy in runs]
    cleanup.extend(started)
    started[0].go()
    assert model.arrived[runs[0][0]].wait(30)
    return started


def test_queue_and_reject_across_processes(memory_spec: str, cleanup: list[Any]) -> None:
    model = Model("first?")
    cleanup.append(model)
    with MockOpenAIServer(model) as server:
        first, rejected, second = workers(
            memory_spec,
            server,
            model,
            cleanup,
            ("first?", "queue"),
            ("rejected?", "reject"),
            ("second?", "queue"),
        )
        assert rejected.go()
        outcome = rejected.outcome()
        assert outcome["error"] == "ConversationBusyError", outcome
        assert second.go()  # queued behind the first run
        model.let_go()
        assert first.outcome() == {"answer": "answer to first?"}
        assert second.outcome() == {"answer": "answer to second?"}
        assert len(server.requests) == 2
        sent = [m["content"] for m in server.requests[1]["messages"]]
    assert sent == ["first?", "answer to first?", "second?"]
    assert contents(memory_spec) == ["first?", "answer to first?", "second?", "answer to second?"]


def test_a_killed_holder_blocks_for_one_ttl_and_a_paused_one_is_fenced_out(
    memory_spec: str, cleanup: list[Any]
) -> None:
    model = Model("first?", "second?")
    cleanup.append(model)
    with MockOpenAIServer(model) as server:
        first, second, third = workers(
            memory_spec,
            server,
            model,
            cleanup,
            ("first?", "queue"),
            ("second?", "queue"),
            ("third?", "queue"),
        )
        assert second.go()  # queued behind a live holder...
        first.process.send_signal(signal.SIGKILL)  # ...which dies without releasing:
        first.kill()
        assert model.arrived["second?"].wait(30)  # the second run goes on after the ttl
        second.process.send_signal(signal.SIGSTOP)  # paused mid-run: no renewals
        assert third.go()  # its lease was still live when the third run started
        assert third.outcome() == {"answer": "answer to third?"}  # after the second one's ttl
        model.let_go()  # the paused run's answer arrives...
        second.process.send_signal(signal.SIGCONT)  # ...and it wakes up to commit it
        outcome = second.outcome()
        sent = [[m["content"] for m in request["messages"]] for request in server.requests]
    assert outcome["error"] == "ConversationBusyError", outcome
    assert sent == [["first?"], ["second?"], ["third?"]]  # nobody committed before the third
    assert contents(memory_spec) == ["third?", "answer to third?"]
