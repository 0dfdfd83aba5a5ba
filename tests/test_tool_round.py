"""The tool round's own merge (``run_tools``): one ``tool_result`` per call whichever of its
value and its timeout comes first, progress never after that result, completion only once
every call and the source of calls have completed, and a dispose that cancels the calls and
their timers. On real threads where the races are, and in virtual time where the clock is."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex.scheduler import ImmediateScheduler
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxreact import Tool, tool
from rxreact.cancellation import CancellationToken
from rxreact.events import ToolExecutionStarted, ToolProgress, ToolResult
from rxreact.messages import ToolCall
from rxreact.operators import run_tools
from rxreact.operators._tool_call import Call
from rxreact.rx._immediate import immediately
from rxreact.scheduling import ElasticScheduler


def calls(*names: str) -> list[ToolCall]:
    return [ToolCall(id=f"c{i}", name=name, arguments="{}") for i, name in enumerate(names)]


class Recorder(abc.ObserverBase[Any]):
    def __init__(self, watch: Callable[[Any], None] | None = None) -> None:
        self.events: list[Any] = []
        self.ends: list[str] = []
        self.done = threading.Event()
        self.watch = watch

    def on_next(self, event: Any) -> None:
        if self.watch is not None:
            self.watch(event)
        self.events.append(event)

    def on_error(self, error: Exception) -> None:
        self.ends.append(f"error {error}")
        self.done.set()

    def on_completed(self) -> None:
        self.ends.append("completed")
        self.done.set()


def tool_round(
    tools: list[Any],
    round_calls: list[ToolCall],
    scheduler: abc.SchedulerBase,
    tools_scheduler: abc.SchedulerBase,
    timeout: float | None,
    source: Observable[ToolCall] | None = None,
    watch: Callable[[Any], None] | None = None,
) -> tuple[Recorder, list[ToolResult | None], abc.DisposableBase]:
    results: list[ToolResult | None] = [None] * len(round_calls)
    recorder = Recorder(watch)
    operator = run_tools(
        {t.name: t for t in tools},
        round_number=1,
        results=results,
        scheduler=scheduler,
        tools_scheduler=tools_scheduler,
        default_timeout=timeout,
    )
    subscription = (source or immediately(*round_calls)).pipe(operator).subscribe(recorder)
    return recorder, results, subscription


def never_answering() -> tuple[Tool[..., Observable[str]], list[CancellationToken]]:
    """A tool that never answers, and the tokens of its calls."""
    tokens: list[CancellationToken] = []

    @tool
    def forever(token: CancellationToken) -> Observable[str]:
        """Never answers."""
        tokens.append(token)
        return reactivex.never()

    return forever, tokens


def test_value_and_timeout_race_on_real_threads_one_result_per_call() -> None:
    # Each call reports progress, then returns just around its deadline: value, timeout and
    # progress race on three threads (the tools pool, the timer, the agent pool), many times.
    pool = ElasticScheduler(4, name="round_race")
    tools_pool = ElasticScheduler(8, name="round_race_tools")

    @tool
    def slow(progress: Callable[[Any], None]) -> str:
        """Reports, then returns near the deadline."""
        progress("half")
        threading.Event().wait(0.0005)
        progress("nearly")
        return "value"

    for _ in range(200):
        round_calls = calls("slow", "slow", "slow")
        recorder, results, _ = tool_round([slow], round_calls, pool, tools_pool, 0.0005)
        assert recorder.done.wait(10)
        assert recorder.ends == ["completed"]
        by_call: dict[str, list[Any]] = {}
        for event in recorder.events:
            by_call.setdefault(event.call_id, []).append(event)
        for call in round_calls:
            kinds = [type(e) for e in by_call[call.id]]
            assert kinds[0] is ToolExecutionStarted
            assert kinds.count(ToolResult) == 1
            assert kinds[-1] is ToolResult  # no progress after the result
            (result,) = [e for e in by_call[call.id] if type(e) is ToolResult]
            assert result.content == "value" or "timed out after 0.0005 s" in result.content
        assert [r.call_id if r else None for r in results] == ["c0", "c1", "c2"]


def test_calls_that_finish_during_subscribe_complete_the_round_once_after_all() -> None:
    # On the immediate scheduler every call ends before the next one starts: the completion
    # counter must not reach zero while the source still has calls to give.
    @tool
    def quick(n: int = 0) -> str:
        """Answers at once."""
        return "ok"

    now = ImmediateScheduler.singleton()
    recorder, results, _ = tool_round([quick], calls("quick", "quick", "nope"), now, now, None)
    assert recorder.ends == ["completed"]
    kinds = [type(e).__name__ for e in recorder.events]
    assert kinds == ["ToolExecutionStarted", "ToolResult"] * 3
    assert [r.is_error for r in results if r] == [False, False, True]
    assert "there is no tool named 'nope'" in (results[2].content if results[2] else "")


def test_a_round_with_no_calls_completes_at_once() -> None:
    now = ImmediateScheduler.singleton()
    recorder, results, _ = tool_round([], [], now, now, None)
    assert (recorder.events, recorder.ends, results) == ([], ["completed"], [])


def test_dispose_cancels_running_calls_and_their_timers_in_virtual_time() -> None:
    forever, tokens = never_answering()
    scheduler = TestScheduler()
    recorder, results, subscription = tool_round(
        [forever], calls("forever", "forever"), scheduler, scheduler, 5.0
    )
    scheduler.advance_to(1.0)
    assert len(tokens) == 2 and not any(t.cancelled for t in tokens)
    subscription.dispose()
    assert all(t.cancelled for t in tokens)
    scheduler.advance_to(10.0)  # past the deadline: the timers were cancelled with the calls
    assert [type(e) for e in recorder.events] == [ToolExecutionStarted] * 2
    assert recorder.ends == [] and results == [None, None]


def test_a_timeout_cancels_the_call_before_its_result_is_seen_in_virtual_time() -> None:
    forever, tokens = never_answering()
    seen_cancelled: list[bool] = []

    def watch(event: Any) -> None:
        if type(event) is ToolResult:
            seen_cancelled.append(tokens[0].cancelled)

    scheduler = TestScheduler()
    recorder, results, _ = tool_round(
        [forever], calls("forever"), scheduler, scheduler, 5.0, watch=watch
    )
    scheduler.advance_to(4.9)
    assert recorder.ends == []
    scheduler.advance_to(5.0)
    assert recorder.ends == ["completed"] and seen_cancelled == [True]
    assert results[0] is not None and "timed out after 5 s" in results[0].content


def test_a_result_cancels_the_calls_timer_in_virtual_time() -> None:
    @tool
    def empty() -> Observable[str]:
        """Completes with nothing: its result is ``None``."""
        return reactivex.empty()

    scheduler = TestScheduler()
    recorder, results, _ = tool_round([empty], calls("empty"), scheduler, scheduler, 5.0)
    scheduler.advance_to(10.0)  # its timer was cancelled: no timeout result later
    assert recorder.ends == ["completed"]
    assert [type(e) for e in recorder.events] == [ToolExecutionStarted, ToolResult]
    assert results[0] is not None and (results[0].content, results[0].is_error) == ("null", False)


def test_a_failing_source_of_calls_fails_the_round_and_cancels_its_calls() -> None:
    forever, tokens = never_answering()
    scheduler = TestScheduler()
    round_calls = calls("forever")
    source: Subject[ToolCall] = Subject()
    recorder, _, _ = tool_round([forever], round_calls, scheduler, scheduler, None, source)
    source.on_next(round_calls[0])
    scheduler.advance_to(1.0)
    assert len(tokens) == 1 and not tokens[0].cancelled
    source.on_error(ValueError("lost"))
    assert recorder.ends == ["error lost"] and tokens[0].cancelled


def test_progress_goes_out_before_the_result_in_call_order() -> None:
    @tool
    def index(pages: int, progress: Callable[[Any], None]) -> str:
        """Indexes pages."""
        for page in range(pages):
            progress(page)
        return "indexed"

    now = ImmediateScheduler.singleton()
    round_calls = [ToolCall(id="a", name="index", arguments='{"pages": 2}')]
    recorder, _, _ = tool_round([index], round_calls, now, now, None)
    assert [(type(e).__name__, getattr(e, "value", None)) for e in recorder.events] == [
        ("ToolExecutionStarted", None),
        ("ToolProgress", 0),
        ("ToolProgress", 1),
        ("ToolResult", None),
    ]
    assert isinstance(recorder.events[1], ToolProgress)


class BlockingSink(abc.ObserverBase[Any]):
    """Records event kinds; holds the first event of kind ``hold`` until ``release``."""

    def __init__(self, hold: type) -> None:
        self.hold = hold
        self.kinds: list[str] = []
        self.entered = threading.Event()
        self.release = threading.Event()

    def on_next(self, value: Any) -> None:
        if type(value) is self.hold and not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(10)
        self.kinds.append(type(value).__name__)

    def on_error(self, error: Exception) -> None:
        self.kinds.append("error")

    def on_completed(self) -> None:
        self.kinds.append("completed")


def one_call(sink: BlockingSink) -> Call:
    call = ToolCall(id="c0", name="t", arguments="{}")

    def make(content: str, is_error: bool) -> ToolResult:
        return ToolResult(
            round=1, call_id="c0", name="t", content=content, is_error=is_error, duration_s=0.0
        )

    return Call(call, 1, sink, threading.RLock(), make, None)


def test_a_result_waits_for_the_progress_being_passed_on() -> None:
    sink = BlockingSink(ToolProgress)
    running = one_call(sink)
    reporter = threading.Thread(target=running.progress, args=("half",))
    reporter.start()
    assert sink.entered.wait(10)
    settler = threading.Thread(target=running.on_next, args=("value",))
    settler.start()
    settler.join(0.5)  # bounded: a result that does not wait would be through by now
    sink.release.set()
    reporter.join(10)
    settler.join(10)
    assert sink.kinds == ["ToolProgress", "ToolResult", "completed"]


def test_a_value_after_the_timeout_claimed_the_call_is_dropped() -> None:
    sink = BlockingSink(ToolResult)
    running = one_call(sink)
    timer = threading.Thread(target=running._expire, args=(None, 5.0))
    timer.start()
    assert sink.entered.wait(10)  # the timeout's result is being passed on
    running.on_next("late value")  # returns at once: the call is settled
    running.on_error(ValueError("late"))
    running.progress("late progress")
    sink.release.set()
    timer.join(10)
    assert sink.kinds == ["ToolResult", "completed"]


def test_a_subscriber_raising_on_a_result_ends_the_round_and_cancels_the_other_calls() -> None:
    # The result comes from the tool's own thread: nothing there could hear the exception, so
    # the round ends with it (on_error) and the call still running is cancelled.
    running = threading.Event()
    tokens: list[CancellationToken] = []

    @tool
    def forever(token: CancellationToken) -> str:
        """Runs until cancelled."""
        tokens.append(token)
        running.set()
        token.wait(10)
        return "late"

    @tool
    def quick() -> str:
        """Answers once ``forever`` runs."""
        running.wait(10)
        return "ok"

    def watch(event: Any) -> None:
        if type(event) is ToolResult:
            raise ValueError("the subscriber failed")

    pool = ElasticScheduler(2, name="round_raise")
    recorder, _, _ = tool_round(
        [forever, quick], calls("forever", "quick"), pool, pool, None, watch=watch
    )
    assert recorder.done.wait(10)
    assert recorder.ends == ["error the subscriber failed"]
    assert tokens[0].cancelled
