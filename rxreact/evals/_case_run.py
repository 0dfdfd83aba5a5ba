"""One run of one case, recorded: :func:`case_run`.

::

    case_run(agent, case, repeat):  ----------------------r|     r: the RecordedRun, emitted
                                                                 when the agent's run ends
    agent's run (inside):           -e-e-e--e-e-e-e--e-e-|       events kept with their times
    with timeout=t:                 ------------t r|             the run disposed at t

The run starts a fresh conversation holding the case's history (no ``conversation_id``:
nothing is read from or written to the agent's memory) and is subscribed the way every view
of ``ReactAgent`` is (its one output observer stamps ``seq``). It never errors: a failure or
a timeout is the recorded run's ``error``. Disposing cancels the agent's run (its HTTP
response closed, its tools told).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable, SerialDisposable
from reactivex.scheduler import VirtualTimeScheduler

from rxreact._validate import check_question
from rxreact.agent.react_agent import ReactAgent
from rxreact.agent.run_loop import RunLoop
from rxreact.checks.validation import OutputSpec
from rxreact.evals._case import Case
from rxreact.evals._run import RecordedRun
from rxreact.events import FinalAnswer

__all__ = ["case_run", "clock", "describe_error"]


def clock(scheduler: abc.SchedulerBase) -> tuple[Callable[[], float], bool]:
    """The run's clock in seconds, and whether it is virtual (a ``VirtualTimeScheduler``'s)."""
    if isinstance(scheduler, VirtualTimeScheduler):
        return (lambda: scheduler.to_seconds(scheduler.clock)), True
    return time.monotonic, False


def describe_error(error: BaseException) -> str:
    """An error as a run's failure reason: ``"ModelTimeoutError: ..."``."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def case_run(
    agent: ReactAgent,
    case: Case,
    repeat: int,
    *,
    output: OutputSpec | None = None,
    timeout: float | None = None,
    running: dict[int, Callable[[str], None]] | None = None,
) -> Observable[RecordedRun]:
    """The cold Observable of one recorded run of ``case`` (see the module).

    ``running`` receives, while the run lives, a function that ends it as failed with a
    reason (the evaluation's way to end a run that waits forever in virtual time).
    """
    question = check_question(case.question)

    def subscribe(
        observer: abc.ObserverBase[RecordedRun], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        scheduler = agent.scheduler
        now, virtual = clock(scheduler)
        run = RunLoop(agent, question, None, None, output)
        run.history.extend(case.history)
        run.loaded = len(case.history)
        events: list[Any] = []
        times: list[float] = []
        start = now()
        started_at = time.time()
        ended = threading.Lock()
        subscription = SerialDisposable()
        timer = SerialDisposable()

        def on_next(event: Any) -> None:
            events.append(event)
            times.append(now() - start)

        def end(error: str | None, duration: float | None = None) -> None:
            if not ended.acquire(blocking=False):
                return  # the run ended and its timeout fired at once: the first one counts
            timer.dispose()
            if running is not None:
                running.pop(id(ended), None)
            final = events[-1] if events else None
            result = None
            if error is None:
                if isinstance(final, FinalAnswer) and not final.path:
                    result = run.result(final)
                else:
                    error = "AgentError: the run completed without a final_answer event"
            observer.on_next(
                RecordedRun(
                    case=case.name,
                    repeat=repeat,
                    agent=agent.name,
                    model=repr(agent.model),
                    events=tuple(events),
                    times=tuple(times),
                    duration=now() - start if duration is None else duration,
                    error=error,
                    result=result,
                    virtual=virtual,
                    started_at=started_at,
                    start=start,
                    source=case,
                )
            )
            observer.on_completed()

        def timed_out(_: abc.SchedulerBase, __: Any = None) -> None:
            subscription.dispose()  # cancels the run: its connection closed, tools told
            assert timeout is not None
            end(f"TimeoutError: the run took longer than {timeout:g} s (timeout)", timeout)

        def stop(reason: str) -> None:
            subscription.dispose()
            end(reason)

        if running is not None:
            running[id(ended)] = stop
        if timeout is not None:
            timer.disposable = scheduler.schedule_relative(timeout, timed_out)
        subscription.disposable = agent._subscribe(
            run, on_next, lambda error: end(describe_error(error)), lambda: end(None)
        )

        def silence() -> None:  # disposed: an end that comes later is not emitted
            ended.acquire(blocking=False)

        return CompositeDisposable(subscription, timer, Disposable(silence))

    return Observable(subscribe)
