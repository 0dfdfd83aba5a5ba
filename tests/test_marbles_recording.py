"""Recording Observables: times (virtual and real), threads, kinds, lanes, side streams."""

from __future__ import annotations

import threading

import reactivex
from reactivex import operators as ops
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.testing import TestScheduler

from rxreact import ReactAgent, tool
from rxreact.marbles import Recorder, Recording, lane_of, record
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply


def test_virtual_time_records_the_scheduler_clock() -> None:
    scheduler = TestScheduler()
    source = reactivex.from_marbles("-a--b-c|", timespan=1.0)
    rec = record(source, scheduler)

    assert [(m.time, m.kind, m.value) for m in rec] == [
        (1.0, "next", "a"),
        (4.0, "next", "b"),
        (6.0, "next", "c"),
        (7.0, "completed", None),
    ]
    assert rec.virtual and rec.start == 0.0 and rec.duration == 7.0
    assert rec.values == ["a", "b", "c"] and rec.completed and rec.error is None
    assert rec.threads == ["MainThread"]
    assert rec.lanes == ["value"]
    assert scheduler.clock == 7.0  # run until idle, not to TestScheduler.start()'s 1000


def test_times_count_from_subscription_on_a_scheduler_that_has_moved_on() -> None:
    scheduler = TestScheduler()
    scheduler.advance_to(100.0)
    rec = record(reactivex.from_marbles("--x|", timespan=0.5), scheduler)

    assert rec.start == 100.0
    assert [m.time for m in rec] == [101.0, 101.5]
    assert rec.to_marbles(unit=0.5) == "--a|"


def test_errors_are_recorded_as_the_terminal_marble() -> None:
    boom = ValueError("boom")
    rec = record(reactivex.from_marbles("-a-#", timespan=1.0, error=boom), TestScheduler())

    assert rec.terminal is not None and rec.terminal.kind == "error" and rec.terminal.time == 3.0
    assert rec.error is boom and not rec.completed


def test_until_stops_an_endless_virtual_stream() -> None:
    scheduler = TestScheduler()
    rec = record(reactivex.interval(1.0), scheduler, until=3.5)

    assert [(m.time, m.value) for m in rec] == [(1.0, 0), (2.0, 1), (3.0, 2)]
    assert rec.terminal is None
    scheduler.advance_to(10.0)  # the subscription was disposed: nothing more arrives
    assert len(rec) == 3


def test_real_time_records_monotonic_seconds_and_threads() -> None:
    pool = ThreadPoolScheduler(2)
    source = reactivex.from_iterable([1, 2, 3]).pipe(ops.subscribe_on(pool))
    rec = record(source, timeout=10.0)

    assert rec.values == [1, 2, 3] and rec.completed
    assert not rec.virtual and rec.start == 0.0
    times = [m.time for m in rec]
    assert times == sorted(times) and 0.0 <= times[0] < 10.0
    assert "MainThread" not in rec.threads
    pool.executor.shutdown()


def test_real_time_timeout_disposes_and_returns_what_arrived() -> None:
    disposed = threading.Event()
    source = reactivex.concat(reactivex.of("first"), reactivex.never()).pipe(
        ops.finally_action(disposed.set)
    )
    rec = record(source, timeout=0.05)

    assert rec.values == ["first"] and rec.terminal is None
    assert disposed.is_set()


def test_a_recorder_subscribed_by_hand_gives_snapshots() -> None:
    scheduler = TestScheduler()
    recorder = Recorder(scheduler)
    reactivex.from_marbles("a-b-|", timespan=1.0).subscribe(recorder, scheduler=scheduler)
    scheduler.advance_to(1.0)
    partial = recorder.recording
    assert partial.values == ["a"] and not recorder.done
    scheduler.advance_to(5.0)

    assert recorder.recording.values == ["a", "b"] and recorder.done
    assert recorder.wait(0) is True
    assert isinstance(partial, Recording) and len(partial) == 1


def test_custom_lanes() -> None:
    rec = record(
        reactivex.from_marbles("1-2-3|", timespan=1.0),
        TestScheduler(),
        lane_of=lambda v: "odd" if v % 2 else "even",
    )
    assert rec.lanes == ["odd", "even"]
    assert [m.value for m in rec.lane("odd")] == [1, 3]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def test_an_agent_run_splits_into_lanes_with_the_model_chunks_on_the_side() -> None:
    scheduler = TestScheduler()
    recorder = Recorder(scheduler)
    model = ScriptedModel(
        [
            tool_call_reply(("get_weather", {"city": "Oslo"}), interval=1.0),
            text_reply("Sunny.", reasoning="easy", interval=1.0),
        ]
    )
    agent = ReactAgent(recorder.wrap_model(model), [get_weather], scheduler=scheduler)
    rec = record(agent.stream("q"), scheduler, recorder=recorder)

    assert rec.lanes == ["rounds", "chunks", "reasoning", "text", "tool_calls", "tools"]
    chunks = rec.lane("chunks")
    assert all(m.side and isinstance(m.value, ChatChunk) for m in chunks)
    assert not any(isinstance(v, ChatChunk) for v in rec.values)  # values: the stream's own
    assert len(model.requests) == 2  # the wrapper passes requests through to the model
    assert rec.of_type("final_answer")[0].text == "Sunny."
    assert rec.times("final_answer") == [rec.duration]


def test_lane_of_agent_events_and_other_values() -> None:
    assert lane_of(ChatChunk(text="x")) == "chunks"
    assert lane_of(42) == "value"
    assert lane_of("text") == "value"
