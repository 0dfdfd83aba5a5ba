"""The operators on a TestScheduler (marbles), and deliver_on with real threads."""

from __future__ import annotations

import threading
from typing import Any

import reactivex
from reactivex import abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.marbles import marbles_testing

from rxreact.agent.round import RoundState
from rxreact.model.chunks import ChatChunk, ToolCallDelta
from rxreact.operators import concat_steps, deliver_on, finish_round, process_chunk

CHUNKS = {
    "r": ChatChunk(role="assistant"),
    "a": ChatChunk(text="Hel"),
    "b": ChatChunk(text="lo"),
    "f": ChatChunk(finish_reason="stop"),
    "c": ChatChunk(tool_calls=(ToolCallDelta(0, "id0", "get", '{"x":'),)),
    "d": ChatChunk(tool_calls=(ToolCallDelta(0, None, None, "1}"),)),
}


def summarize(event: Any) -> str:
    detail = getattr(event, "delta", None) or getattr(event, "mode", None) or ""
    return f"{event.type}:{detail}" if detail else event.type


def timeline(result: list[Any]) -> list[tuple[float, str]]:
    return [(m.time, m.value.value if m.value.kind == "N" else m.value.kind) for m in result]


def test_process_chunk_answer_round_as_marbles() -> None:
    with marbles_testing(timespan=1.0) as (start, cold, _hot, _exp):
        state = RoundState(1)
        result = start(
            cold("r-a-b-f|", CHUNKS).pipe(
                process_chunk(state), finish_round(state), ops.map(summarize)
            )
        )
        # the role chunk decides nothing; "a" decides and streams at once; "f" only ends it
        assert timeline(result) == [
            (202.0, "round_mode_decided:final_answer"),
            (202.0, "text_delta:Hel"),
            (204.0, "text_delta:lo"),
            (207.0, "round_finished:final_answer"),
            (207.0, "C"),
        ]


def test_process_chunk_tool_round_as_marbles() -> None:
    with marbles_testing(timespan=1.0) as (start, cold, _hot, _exp):
        state = RoundState(1)
        result = start(
            cold("r-c-d|", CHUNKS).pipe(
                process_chunk(state), finish_round(state), ops.map(summarize)
            )
        )
        assert timeline(result) == [
            (202.0, "round_mode_decided:tool_call"),
            (202.0, "tool_call_started"),
            (202.0, 'tool_call_args_delta:{"x":'),
            (204.0, "tool_call_args_delta:1}"),
            (205.0, "round_finished:tool_call"),
            (205.0, "C"),
        ]
        assert state.tool_calls()[0].arguments == '{"x":1}'


def test_finish_round_passes_errors_without_round_finished() -> None:
    scheduler = TestScheduler()
    state = RoundState(1)
    error = ValueError("boom")
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, CHUNKS["a"]), ReactiveTest.on_error(20, error)
    )
    observer = scheduler.start(
        lambda: source.pipe(process_chunk(state), finish_round(state), ops.map(summarize))
    )
    assert observer.messages == [
        ReactiveTest.on_next(210, "round_mode_decided:final_answer"),
        ReactiveTest.on_next(210, "text_delta:Hel"),
        ReactiveTest.on_error(220, error),
    ]


def test_deliver_on_keeps_order_and_moves_to_the_scheduler() -> None:
    pool = ThreadPoolScheduler(2)
    caller = threading.get_ident()
    seen: list[int] = []
    threads: set[int] = set()
    done = threading.Event()

    def on_next(value: int) -> None:
        threads.add(threading.get_ident())
        seen.append(value)

    reactivex.from_iterable(range(10_000)).pipe(deliver_on(pool, max_buffer=64)).subscribe(
        on_next, lambda e: done.set(), done.set
    )
    assert done.wait(10)
    assert seen == list(range(10_000))
    assert caller not in threads


def test_deliver_on_holds_a_fast_producer_back() -> None:
    pool = ThreadPoolScheduler(1)
    release = threading.Event()
    produced: list[int] = []
    progress = threading.Condition()
    consumed: list[int] = []
    done = threading.Event()

    def producer(observer: Any, scheduler: Any = None) -> Any:
        def run() -> None:
            for i in range(100):
                with progress:
                    produced.append(i)
                    progress.notify_all()
                observer.on_next(i)
            observer.on_completed()

        threading.Thread(target=run, daemon=True).start()
        return reactivex.disposable.Disposable()

    def slow_consumer(value: int) -> None:
        if value == 0:
            release.wait(10)  # the subscriber is stuck on its first item
        consumed.append(value)

    reactivex.create(producer).pipe(deliver_on(pool, max_buffer=8)).subscribe(
        slow_consumer, on_completed=done.set
    )
    # The bound: 8 queued + one drained batch (<= 8) in delivery + the item the producer holds.
    # At least 1 + 8 + 1 are produced before the producer must stop; past 17 it ran away.
    with progress:
        assert progress.wait_for(lambda: len(produced) >= 10, timeout=10)
        ran_away = progress.wait_for(lambda: len(produced) > 2 * 8 + 1, timeout=0.2)
    assert not ran_away, f"producer was not held back: {len(produced)} produced"
    release.set()
    assert done.wait(10)
    assert consumed == list(range(100))


def test_deliver_on_dispose_stops_delivery() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        ReactiveTest.on_next(210, 1), ReactiveTest.on_next(300, 2), ReactiveTest.on_completed(400)
    )
    observer = scheduler.start(lambda: source.pipe(deliver_on(scheduler)), disposed=250)
    assert observer.messages == [ReactiveTest.on_next(210, 1)]


def test_finish_round_ends_with_the_error_a_subscriber_raises_on_round_finished() -> None:
    # round_finished is sent from the source's completion: nothing upstream can hear an
    # exception raised on it, so the round ends through on_error instead.
    scheduler = TestScheduler()
    state = RoundState(1)
    error = ValueError("the subscriber failed")
    seen: list[str] = []

    def on_next(event: Any) -> None:
        seen.append(event.type)
        if event.type == "round_finished":
            raise error

    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, CHUNKS["a"]), ReactiveTest.on_completed(20)
    )
    source.pipe(process_chunk(state), finish_round(state)).subscribe(
        on_next, lambda e: seen.append(f"error {e}"), lambda: seen.append("completed")
    )
    scheduler.start()
    assert seen == [
        "round_mode_decided",
        "text_delta",
        "round_finished",
        "error the subscriber failed",
    ]


def test_concat_steps_ends_with_what_the_subscriber_raises_and_pulls_no_more_steps() -> None:
    # The subscriber raises on "b", which a step emits from a scheduled action of its own (as
    # a tool's thread or a timer would): nothing there could hear it.
    #   steps:    first: -(abc|)    second: (d|)
    #   result:   -(ab#)            (# the subscriber's error; "c" and the second step never pass)
    scheduler = TestScheduler()
    pulled: list[str] = []
    disposed = threading.Event()

    def first(
        observer: abc.ObserverBase[str], step_scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def emit(_: abc.SchedulerBase, __: Any = None) -> None:
            for value in "abc":
                observer.on_next(value)
            observer.on_completed()

        scheduler.schedule_relative(1.0, emit)
        return Disposable(disposed.set)

    def steps() -> Any:
        pulled.append("first")
        yield reactivex.create(first)
        pulled.append("second")
        yield reactivex.of("d")

    seen: list[str] = []

    def on_next(value: str) -> None:
        seen.append(value)
        if value == "b":
            raise ValueError("the subscriber failed")

    concat_steps(steps()).subscribe(
        on_next,
        lambda e: seen.append(f"error {e}"),
        lambda: seen.append("completed"),
        scheduler=scheduler,
    )
    scheduler.start()
    assert seen == ["a", "b", "error the subscriber failed"]
    assert pulled == ["first"]
    assert disposed.is_set()
