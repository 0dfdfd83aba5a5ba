"""Recorded runs played again in virtual time, at their recorded offsets.

::

    recording:  e1@0.0  e2@0.0  e3@0.5  e4@2.25 ... end@3.5
    replay():   (e1,e2)-----e3----------------e4-- ... |      on an EvalScheduler: no real
                                                             time passes, and each event's
                                                             time is read off its clock again

Runs replay one after another on one scheduler (each from its own start), so the scheduler
holds one action at a time, whatever the number of runs. A re-scored run's times are those
of its replay: the same as recorded, by construction of the clock, never of a copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from itertools import groupby
from typing import Any

from reactivex import abc

from rxreact.evals._run import RecordedRun
from rxreact.evals._virtual import EvalScheduler
from rxreact.marbles.lanes import lane_of
from rxreact.marbles.recording import Marble, Recording

__all__ = ["recording_of", "replay"]


def replay(runs: Sequence[RecordedRun], on_run: Callable[[RecordedRun], None]) -> None:
    """Play ``runs`` in virtual time; ``on_run`` gets each replayed run as its end plays."""
    scheduler = EvalScheduler()
    queue = iter(runs)

    def next_run() -> None:
        run = next(queue, None)
        if run is not None:
            _play(scheduler, run, finished)

    def finished(run: RecordedRun) -> None:
        on_run(run)
        next_run()

    scheduler.schedule(lambda *_: next_run())
    scheduler.drain()


def _play(scheduler: EvalScheduler, run: RecordedRun, done: Callable[[RecordedRun], None]) -> None:
    start = scheduler.seconds()
    batches = [
        (offset, [event for _, event in group])
        for offset, group in groupby(zip(run.times, run.events, strict=True), key=lambda p: p[0])
    ]
    events: list[Any] = []
    times: list[float] = []
    position = 0

    def step(_: abc.SchedulerBase, __: Any = None) -> None:
        nonlocal position
        now = scheduler.seconds() - start
        batch = batches[position][1]
        events.extend(batch)
        times.extend([now] * len(batch))
        position += 1
        if position < len(batches):
            scheduler.schedule_absolute(start + batches[position][0], step)
        elif run.duration is not None and run.duration > batches[-1][0]:
            scheduler.schedule_absolute(start + run.duration, end)  # the recorded end
        else:
            end()

    def end(_: abc.SchedulerBase | None = None, __: Any = None) -> None:
        duration = None if run.duration is None else scheduler.seconds() - start
        done(replace(run, events=tuple(events), times=tuple(times), duration=duration))

    if batches:
        scheduler.schedule_absolute(start + batches[0][0], step)
    elif run.duration is not None:
        scheduler.schedule_absolute(start + run.duration, end)
    else:
        end()


def recording_of(run: RecordedRun) -> Recording:
    """``run`` as a marble :class:`~rxreact.marbles.Recording` (times from its start)."""
    marbles = [
        Marble(time, "next", event, "replay", lane_of(event))
        for time, event in zip(run.times, run.events, strict=True)
    ]
    if run.duration is not None:
        end = max(run.duration, run.times[-1] if run.times else 0.0)
        if run.error is None:
            marbles.append(Marble(end, "completed", None, "replay", ""))
        else:
            marbles.append(Marble(end, "error", RuntimeError(run.error), "replay", ""))
    return Recording(marbles, start=0.0, virtual=run.virtual)
