"""Races between a thread that schedules work and the pool that runs it.

RxPY chains work as ``disposable = scheduler.schedule(action)``: when the scheduling thread is
preempted between the two, the action can run and schedule its successor first, and the late
assignment disposes that successor. These tests force that interleaving deterministically (a
scheduler that runs the new action before ``schedule`` returns) and then hunt for it with
thousands of agent runs on a scheduler that preempts its callers at random.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import ImmediateScheduler
from reactivex.scheduler.periodicscheduler import PeriodicScheduler
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxreact import ModelConnectionError, OpenAIChatModel, ReactAgent, RunStalledError, tool
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Hang, text_reply, tool_call_reply
from rxreact.operators import concat_steps, retry_unstarted, timeout_with
from rxreact.rx._immediate import immediately
from rxreact.scheduling import ElasticScheduler
from rxreact.testing import ChaosScheduler


class SteppingScheduler(PeriodicScheduler):
    """Runs nothing by itself: the test runs queued actions, and can do so *inside* a
    ``schedule`` call (``preempt_next``), before it returns to its caller."""

    def __init__(self) -> None:
        super().__init__()
        self.queue: list[list[Any]] = []
        self.preempt_next = False

    def schedule(self, action: Any, state: Any = None) -> abc.DisposableBase:
        entry = [action, state, False]
        self.queue.append(entry)
        handle = Disposable(lambda: entry.__setitem__(2, True))
        if self.preempt_next:
            # The caller is "preempted" here: its action runs (and schedules its successor)
            # before the caller gets to store the handle it is about to receive.
            self.preempt_next = False
            self.run(entry)
        return handle

    def schedule_relative(self, duetime: Any, action: Any, state: Any = None) -> Any:
        raise NotImplementedError

    def schedule_absolute(self, duetime: Any, action: Any, state: Any = None) -> Any:
        raise NotImplementedError

    def run(self, entry: list[Any]) -> None:
        self.queue.remove(entry)
        if not entry[2]:
            entry[0](self, entry[1])

    def run_all(self) -> None:
        while self.queue:
            self.run(self.queue[0])


def preempted_chain(
    concat: Callable[[list[Observable[str]]], Observable[str]],
) -> tuple[list[str], list[str]]:
    """Three steps; the second starts while the thread completing the first is preempted."""
    scheduler = SteppingScheduler()
    first: Subject[str] = Subject()
    values: list[str] = []
    ends: list[str] = []
    concat([first, immediately("b"), immediately("c")]).subscribe(
        values.append,
        lambda e: ends.append(repr(e)),
        lambda: ends.append("done"),
        scheduler=scheduler,
    )
    scheduler.run_all()  # the first step is subscribed
    scheduler.preempt_next = True
    first.on_completed()  # schedules step 2, which runs and schedules step 3 before the return
    scheduler.run_all()
    return values, ends


def test_rxpy_concat_loses_the_step_after_a_preempted_one() -> None:
    # The defect this file is about, shown on the library operator (if RxPY fixes it, this
    # test says so and concat_steps can go).
    values, ends = preempted_chain(reactivex.concat_with_iterable)
    assert values == ["b"]
    assert ends == []


def test_concat_steps_runs_every_step_when_preempted() -> None:
    values, ends = preempted_chain(concat_steps)
    assert values == ["b", "c"]
    assert ends == ["done"]


def test_concat_steps_completes_errors_and_disposes() -> None:
    scheduler = TestScheduler()

    def steps() -> Any:
        yield immediately(1)
        yield reactivex.timer(5.0).pipe(lambda o: o.pipe())  # a step that takes 5 s
        raise ValueError("generator failed")

    seen: list[Any] = []
    concat_steps(steps()).subscribe(seen.append, seen.append, scheduler=scheduler)
    scheduler.start()
    assert seen[0] == 1 and seen[1] == 0 and isinstance(seen[2], ValueError)

    later: list[Any] = []
    pulled: list[int] = []

    def counted() -> Any:
        for n in range(3):
            pulled.append(n)
            yield reactivex.timer(1.0)

    subscription = concat_steps(counted()).subscribe(later.append, scheduler=scheduler)
    scheduler.advance_by(1.5)
    subscription.dispose()
    scheduler.advance_by(10)
    assert pulled == [0, 1] and later == [0]


def test_retry_unstarted_retries_an_attempt_that_fails_inside_subscribe() -> None:
    # The first attempt fails synchronously, so its retry is scheduled before the attempt's
    # own subscription is stored: storing it must not cancel the retry.
    scheduler = TestScheduler()
    attempts = 0

    def subscribe(observer: abc.ObserverBase[str], _: Any = None) -> abc.DisposableBase:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            observer.on_error(ModelConnectionError("refused"))
        else:
            observer.on_next("ok")
            observer.on_completed()
        return Disposable()

    seen: list[Any] = []
    Observable(subscribe).pipe(retry_unstarted(2, Backoff(base=1.0))).subscribe(
        seen.append, seen.append, lambda: seen.append("done"), scheduler=scheduler
    )
    scheduler.advance_by(5)
    assert attempts == 2
    assert seen == ["ok", "done"]


def test_timeout_with_lets_exactly_one_of_value_and_timer_through() -> None:
    # The value and the timer race on two real threads, many times: never both.
    pool = ElasticScheduler(4, name="race")
    for _ in range(300):
        seen: list[Any] = []
        done = threading.Event()
        value: Subject[str] = Subject()
        value.pipe(timeout_with(0.0005, reactivex.of("timeout"), pool)).subscribe(
            seen.append, on_completed=done.set
        )
        pool.schedule(lambda *_, v=value: (v.on_next("value"), v.on_completed()))
        assert done.wait(5)
        assert seen in (["value"], ["timeout"])


@tool
def lookup(city: str) -> str:
    """Looks a city up."""
    return f"{city}: sunny"


def chaotic_runs(count: int, seed: int) -> tuple[int, int]:
    """``count`` concurrent runs (a tool round, then a streamed answer) on a chaotic pool;
    returns (finished with the right answer, failed)."""
    scheduler = ChaosScheduler(8, preempt=0.5, max_pause=0.001, seed=seed)
    tools = ElasticScheduler(8, name="chaos_tools")
    finished = 0
    failed = 0
    lock = threading.Lock()
    all_done = threading.Semaphore(0)

    def on_next(event: Any) -> None:
        nonlocal finished
        if event.type == "final_answer" and event.text == "It is sunny.":
            with lock:
                finished += 1

    def on_error(_: Exception) -> None:
        nonlocal failed
        with lock:
            failed += 1
        all_done.release()

    for n in range(count):
        model = ScriptedModel(
            [
                tool_call_reply(("lookup", {"city": f"c{n}"})),
                text_reply("It is sunny.", interval=0.0005),
            ]
        )
        # No watchdog: a run that loses a step must show up as never ending, not as an error.
        agent = ReactAgent(
            model, [lookup], scheduler=scheduler, tools_scheduler=tools, stall_timeout=None
        )
        agent.stream("q").subscribe(on_next, on_error, all_done.release)
    deadline = time.monotonic() + 30
    ended = 0
    while ended < count and all_done.acquire(timeout=max(0.0, deadline - time.monotonic())):
        ended += 1
    assert ended == count, f"{count - ended} of {count} runs never ended"
    return finished, failed


def test_thousands_of_runs_on_a_chaotic_scheduler_all_end() -> None:
    finished, failed = chaotic_runs(2000, seed=11)
    assert (finished, failed) == (2000, 0)


def test_a_run_that_stalls_ends_with_run_stalled_error_in_virtual_time() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([[Hang()]], scheduler=scheduler)  # a model that never answers
    agent = ReactAgent(model, scheduler=scheduler, tool_timeout=None, stall_timeout=30.0)
    errors: list[tuple[float, Exception]] = []
    agent.stream("q").subscribe(on_error=lambda e: errors.append((scheduler.clock, e)))
    scheduler.advance_by(200)
    assert len(errors) == 1
    at, error = errors[0]
    assert isinstance(error, RunStalledError)
    assert 30 <= at <= 60  # between one and two stall_timeouts after the last event


def test_a_run_that_keeps_making_progress_is_never_stalled() -> None:
    scheduler = TestScheduler()
    model = ScriptedModel([text_reply("slow " * 20, interval=20.0)], scheduler=scheduler)
    agent = ReactAgent(model, scheduler=scheduler, tool_timeout=None, stall_timeout=30.0)
    events: list[Any] = []
    agent.stream("q").subscribe(events.append, events.append)
    scheduler.advance_by(1000)
    assert events[-1].type == "final_answer"  # 20 s between chunks never trips a 30 s watchdog


@pytest.mark.parametrize("bad", [0, -1, 60.0, 10.0])
def test_stall_timeout_must_exceed_tool_timeout(bad: float) -> None:
    with pytest.raises(ValueError, match="stall_timeout"):
        ReactAgent(ScriptedModel([]), tool_timeout=60.0, stall_timeout=bad)


def test_thread_mode_retries_an_attempt_that_fails_before_schedule_returns() -> None:
    # An I/O scheduler that runs the attempt inside ``schedule``: the connection is refused,
    # the retry timer is set, and only then does ``schedule`` return its handle. Storing that
    # handle must not cancel the retry (the stream then never ended).
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there: every connect is refused at once
    model = OpenAIChatModel(
        "m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="sk-test",
        io="thread",
        io_scheduler=ImmediateScheduler(),
        max_retries=2,
        backoff=Backoff(base=0.01),
    )
    errors: list[Exception] = []
    done = threading.Event()
    request = ChatRequest(messages=(UserMessage(content="q"),))
    model.stream(request).subscribe(
        on_error=lambda e: (errors.append(e), done.set()), on_completed=done.set
    )
    assert done.wait(20), "the failed attempt's retry was cancelled: the stream never ended"
    assert isinstance(errors[0], ModelConnectionError)
