"""Hot runs in one process: seq, sharing, replay, resume, cancel, detach, retention, virtual time.

The model is the loopback mock (real HTTP, real SSE), which counts requests; a run is held at
a known point by a tool waiting on a ``threading.Event`` the test sets, never by a sleep.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import (
    BadRequestError,
    CancellationToken,
    InMemoryChatMemory,
    InMemoryEventLog,
    OpenAIChatModel,
    ReactAgent,
    RunCancelledError,
    RunNotFoundError,
    follow,
    tool,
)
from rxreact.messages import ChatRequest
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Hang, HTTPErrorReply, Script, text_reply, tool_call_reply
from rxreact.testing import ChaosScheduler, MockOpenAIServer
from rxreact.testing.conformance._event_log import Collected

ANSWER = "The gate opened and every subscriber saw the same words in the same order."


class Collector(Collected):
    """Subscribes and keeps what arrives; ``done`` is set by completion or error."""

    events: list[Any]

    def wait(self, timeout: float = 10.0) -> Collector:
        super().wait(timeout)
        return self

    @property
    def text(self) -> str:
        return "".join(e.delta for e in self.events if e.type == "text_delta")


class Gate:
    """A tool that waits until the test opens the gate (and says when it was reached)."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.opened = threading.Event()
        self.cancelled = threading.Event()

        @tool
        def gate(token: CancellationToken) -> str:
            """Waits for the test."""
            self.reached.set()
            while not self.opened.wait(0.05):
                if token.cancelled:
                    self.cancelled.set()
                    return "cancelled"
            return "open"

        self.tool = gate


@pytest.fixture
def serve() -> Iterator[Any]:
    opened: list[Any] = []

    def start(script: Script) -> tuple[MockOpenAIServer, OpenAIChatModel]:
        server = MockOpenAIServer(script).start()
        model = OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test", max_retries=0)
        opened.extend((model, server))
        return server, model

    yield start
    for item in opened:
        item.close() if isinstance(item, OpenAIChatModel) else item.stop()


def gated_script() -> list[Any]:
    return [tool_call_reply(("gate", {})), text_reply(ANSWER, size=4)]


def test_three_subscribers_and_a_late_one_see_one_run(serve: Any) -> None:
    server, model = serve(gated_script())
    gate = Gate()
    agent = ReactAgent(model, [gate.tool])
    run = agent.start("Open the gate.")
    first = Collector(run.events())
    assert gate.reached.wait(10)
    second, third = Collector(run.events()), Collector(run.events())  # joined mid-run: replay
    gate.opened.set()
    result = run.result(timeout=10)
    late = Collector(run.events())  # after the end, within retention

    lists = [c.wait().seqs for c in (first, second, third, late)]
    assert lists[0] == list(range(1, len(lists[0]) + 1))
    assert lists == [lists[0]] * 4
    assert all(c.text == ANSWER == result.answer for c in (first, second, third, late))
    assert all(c.events[-1].type == "final_answer" for c in (first, late))
    assert len(server.requests) == 2  # one run: one request per round, whoever watched
    assert run.done


def test_events_after_k_resume_exactly(serve: Any) -> None:
    _, model = serve([text_reply(ANSWER, size=3)])
    run = ReactAgent(model).start("q")
    run.result(timeout=10)
    full = Collector(run.events()).wait().events
    for k in (0, 1, 5, len(full) - 1, len(full), len(full) + 3):
        resumed = Collector(run.events(after=k)).wait()
        assert resumed.events == full[k:]
        assert resumed.error is None


def test_cancel_stops_the_run_like_disposing_a_cold_stream(serve: Any) -> None:
    server, model = serve([tool_call_reply(("gate", {})), text_reply("never")])
    gate, memory = Gate(), InMemoryChatMemory()
    run = ReactAgent(model, [gate.tool], memory=memory).start("q", conversation_id="c")
    watcher = Collector(run.events())
    assert gate.reached.wait(10)

    run.cancel()

    assert gate.cancelled.wait(10)  # the running tool was told
    assert isinstance(watcher.wait().error, RunCancelledError)
    with pytest.raises(RunCancelledError):
        run.result(timeout=10)
    assert memory.load("c") == []  # nothing written
    assert len(server.requests) == 1  # no further round
    assert isinstance(Collector(run.events()).wait().error, RunCancelledError)  # late ones too


def test_cancel_closes_the_http_stream(serve: Any) -> None:
    server, model = serve([[*text_reply("partial")[:2], Hang()]])  # silent mid-answer
    run = ReactAgent(model).start("q")
    seen = threading.Event()
    run.events().subscribe(lambda e: seen.set() if e.type == "text_delta" else None)
    assert seen.wait(10)
    run.cancel()
    assert server.wait_for_disconnects(1, timeout=10)
    assert run.done


def test_a_disconnect_is_not_a_cancel(serve: Any) -> None:
    _, model = serve(gated_script())
    gate, memory = Gate(), InMemoryChatMemory()
    run = ReactAgent(model, [gate.tool], memory=memory).start("q", conversation_id="c")
    leaving = Collector(run.events())
    assert gate.reached.wait(10)
    leaving.subscription.dispose()
    seen = len(leaving.events)
    gate.opened.set()

    assert run.result(timeout=10).answer == ANSWER
    assert len(leaving.events) == seen and not leaving.done.is_set()  # detached, only it
    assert [m.role for m in memory.load("c")] == ["user", "assistant", "tool", "assistant"]


def test_the_run_error_reaches_every_subscriber(serve: Any) -> None:
    _, model = serve([HTTPErrorReply(400, "bad request")])
    run = ReactAgent(model).start("q")
    with pytest.raises(BadRequestError):
        run.result(timeout=10)
    error = Collector(run.events()).wait().error
    assert isinstance(error, BadRequestError) and error.status_code == 400


def test_aresult_and_follow_through_the_log(serve: Any) -> None:
    _, model = serve([text_reply(ANSWER)])
    log = InMemoryEventLog()
    run = ReactAgent(model, event_log=log).start("q")

    result = asyncio.run(run.aresult())

    assert result.answer == ANSWER
    assert Collector(follow(run.id, log)).wait().text == ANSWER
    assert isinstance(Collector(follow("no-such-run", log)).wait().error, RunNotFoundError)


def test_active_run_and_request_cancel(serve: Any) -> None:
    _, model = serve([tool_call_reply(("gate", {})), text_reply("never")])
    gate, log = Gate(), InMemoryEventLog()
    run = ReactAgent(model, [gate.tool], event_log=log).start("q", conversation_id="c")
    assert log.active_run("c") == run.id
    assert gate.reached.wait(10)

    log.request_cancel(run.id)

    with pytest.raises(RunCancelledError):
        run.result(timeout=10)
    assert log.active_run("c") is None


def test_retention_keeps_the_last_finished_runs() -> None:
    log = InMemoryEventLog(max_runs=1)
    agent = ReactAgent(ScriptedModel([text_reply("one"), text_reply("two")]), event_log=log)
    first = agent.start("1")
    first.result(timeout=10)
    second = agent.start("2")
    second.result(timeout=10)
    assert isinstance(Collector(first.events()).wait().error, RunNotFoundError)
    assert Collector(second.events()).wait().text == "two"


def test_a_slow_subscriber_never_holds_the_run_back() -> None:
    agent = ReactAgent(ScriptedModel([text_reply("w " * 2000, size=2)]))
    run = agent.start("q")
    release = threading.Event()
    blocked: list[Any] = []

    def slow(event: Any) -> None:
        if not blocked:
            blocked.append(event)
            assert release.wait(10)

    slowpoke = run.events().subscribe(slow)
    result = run.result(timeout=10)  # finished while the subscriber is stuck on event 1
    release.set()
    assert result.answer == "w " * 2000
    slowpoke.dispose()


def test_seq_is_consecutive_in_cold_streams_with_concurrent_tools() -> None:
    @tool
    def echo(word: str) -> str:
        """Returns its word."""
        return word

    calls = [("echo", {"word": w}) for w in "abcdef"]
    runs = 40

    def script(request: ChatRequest) -> Any:  # runs interleave: answer by the request's state
        if request.messages[-1].role == "tool":
            return text_reply("done " * 20)
        return tool_call_reply(*calls)

    model = ScriptedModel(script)
    pool = ChaosScheduler(8, seed=3)  # callers held back at random after scheduling
    agent = ReactAgent(model, [echo], scheduler=pool, tools_scheduler=pool)

    collectors = [Collector(agent.stream("q")) for _ in range(runs)]

    for c in collectors:
        assert c.wait().error is None
        assert c.seqs == list(range(1, len(c.events) + 1))
        assert sorted(e.content for e in c.events if e.type == "tool_result") == list("abcdef")


def test_a_hot_run_in_virtual_time() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([text_reply("a b c d", interval=1.0)])
    agent = ReactAgent(model, scheduler=scheduler)
    run = agent.start("q")
    timeline: dict[str, list[tuple[float, int]]] = {"early": [], "late": []}

    def watch(name: str) -> Any:
        return lambda _s, _st: run.events().subscribe(
            lambda e: timeline[name].append((scheduler.clock, e.seq))
        )

    scheduler.schedule_absolute(0.0, watch("early"))
    scheduler.schedule_absolute(2.5, watch("late"))
    result = run.result()

    assert result.answer == "a b c d"
    early, late = timeline["early"], timeline["late"]
    assert [seq for _, seq in early] == list(range(1, len(early) + 1))
    assert [seq for _, seq in late] == [seq for _, seq in early]
    # The late subscriber got the events before 2.5 at 2.5 (replayed), then lived in step.
    replayed = [seq for (t, seq) in early if t <= 2.5]
    assert [t for t, seq in late if seq in replayed] == [2.5] * len(replayed)
    assert [(t, s) for t, s in late if s not in replayed] == [
        (t, s) for t, s in early if s not in replayed
    ]
    assert early[-1][0] == 5.0  # the finish chunk of a 1 s-paced reply of 6 chunks


def test_many_runs_share_one_log() -> None:
    log = InMemoryEventLog()
    agent = ReactAgent(ScriptedModel([text_reply(f"answer {i}") for i in range(20)]), event_log=log)
    runs = [agent.start(f"q{i}") for i in range(20)]
    answers = sorted(r.result(timeout=10).answer for r in runs)
    assert answers == sorted(f"answer {i}" for i in range(20))
    texts = sorted(Collector(follow(r.id, log)).wait().text for r in runs)
    assert texts == answers


def test_many_subscribers_joining_many_running_runs_all_finish() -> None:
    # Subscribers join from several threads while the runs stream, on a scheduler that holds
    # callers back right after scheduling (where a lost wake-up would hide): every one must
    # see its run's whole sequence, not wait forever.
    answer = "w " * 300
    chaos = ChaosScheduler(8, preempt=0.5, max_pause=0.002, seed=9)
    agent = ReactAgent(ScriptedModel(lambda _: text_reply(answer, size=2)), scheduler=chaos)
    collectors: list[tuple[Any, Collector]] = []
    lock = threading.Lock()

    def join(run: Any) -> None:
        for _ in range(6):
            collector = Collector(run.events())
            with lock:
                collectors.append((run, collector))

    runs = [agent.start("q") for _ in range(30)]
    threads = [threading.Thread(target=join, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert len(collectors) == 180
    for run, collector in collectors:
        assert collector.wait().error is None
        assert collector.text == answer == run.result(timeout=10).answer
        assert collector.seqs == list(range(1, len(collector.seqs) + 1))
