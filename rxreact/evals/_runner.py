"""Running a dataset: every case ``repeat`` times, ``concurrency`` runs in flight, each run
recorded as it ends, then scored.

::

    jobs:     (case, repeat) for every case and repeat
    runs:     from_iterable(jobs) | map(case_run) | merge(max_concurrent=concurrency)
                  -----r1---r2-r3-------r4--...--|        a run's end lets the next one start
    each r:   [write it to record_to] ─► score it ─► the progress bar ─► the report

Live, runs go on the agent's own threads and the caller waits on an event (Ctrl-C
interrupts that wait: the runs in flight are disposed, their connections closed, and
:class:`~rxreact.evals.EvaluationInterrupted` carries what finished). In virtual time one
:class:`~rxreact.evals._virtual.EvalScheduler` carries every run on the calling thread; a
run that waits forever (a scripted ``Hang`` and no timeout) is ended as failed once
nothing else is left to happen. Built-in evaluators score inline (pure functions of the
record); live, custom and judge evaluators, which may wait, score on the tools' pool (in
virtual time everything scores inline, on the calling thread, where waiting is allowed).
A file in ``record_to`` is named after its case and repeat: evaluating again into the same
directory replaces the recordings of the same runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import replace
from os import PathLike
from typing import TYPE_CHECKING, Any

import reactivex
from reactivex import abc
from reactivex import operators as ops
from reactivex.scheduler import VirtualTimeScheduler

from rxreact._validate import check_int, check_optional_seconds, described
from rxreact.agent.react_agent import ReactAgent
from rxreact.checks.validation import output_spec
from rxreact.errors import InvalidArgumentError
from rxreact.evals._case_run import case_run
from rxreact.evals._gc import FinishedRuns
from rxreact.evals._progress import Progress
from rxreact.evals._recording import write_run
from rxreact.evals._report import CaseResult, Report, RunResult
from rxreact.evals._run import RecordedRun
from rxreact.evals._score import Scorer
from rxreact.evals._virtual import EvalScheduler
from rxreact.evals.errors import EvaluationInterrupted
from rxreact.scheduling import shared_scheduler

if TYPE_CHECKING:
    from rxreact.evals._dataset import Dataset

__all__ = ["Evaluation", "aevaluate", "evaluate"]


def evaluate(dataset: Dataset, agent: Any, **settings: Any) -> Report:
    """``Dataset.evaluate``: see there."""
    return Evaluation(dataset, agent, **settings).run()


async def aevaluate(dataset: Dataset, agent: Any, **settings: Any) -> Report:
    """``Dataset.aevaluate``: see there."""
    return await Evaluation(dataset, agent, **settings).arun()


class Evaluation:
    """One evaluation of a dataset: its jobs, where the runs go, what came back."""

    def __init__(
        self,
        dataset: Dataset,
        agent: Any,
        *,
        concurrency: int = 8,
        repeat: int = 1,
        record_to: str | PathLike[str] | None = None,
        progress: bool = True,
        timeout: float | None = None,
        virtual_time: bool = False,
        output_type: Any = None,
    ) -> None:
        self._lock = threading.Lock()
        self.dataset = dataset
        self.concurrency = check_int("concurrency", concurrency, 1)
        repeat = check_int("repeat", repeat, 1)
        self.timeout = check_optional_seconds("timeout", timeout)
        self.record_to = record_to
        self.output = output_spec(output_type)
        self.cases = {case.name: case for case in dataset.cases}
        self.order = {case.name: i for i, case in enumerate(dataset.cases)}
        self.jobs = [(case, i) for case in dataset.cases for i in range(repeat)]
        self.scorer = Scorer(dataset.evaluators, self.cases)
        self.scheduler: VirtualTimeScheduler | None = None
        self.new_agent = self._agents(agent, virtual_time)
        self.progress = Progress(len(self.jobs), progress)
        self.scored: list[RunResult] = []
        self.failure: BaseException | None = None
        self.done = threading.Event()
        self._open = 1  # the runs' stream, plus each scoring on the tools' pool
        self._notify: Callable[[], None] | None = None
        self._running: dict[int, Callable[[str], None]] = {}  # virtual time: ends a stalled run
        # Only in virtual time, where runs come fast enough for the collector to matter; a
        # live evaluation leaves the process's collector alone.
        self.kept = FinishedRuns(enabled=self.scheduler is not None)

    def _agents(self, agent: Any, virtual_time: bool) -> Callable[[], ReactAgent]:
        """What gives each run its agent: the agent itself, or the factory's (called once
        for live runs, once per run in virtual time: a scripted model plays one script)."""
        if isinstance(agent, ReactAgent):
            if isinstance(agent.scheduler, VirtualTimeScheduler):
                self.scheduler = agent.scheduler  # its time moves only when this moves it
            elif virtual_time:
                raise InvalidArgumentError(
                    "virtual_time=True needs a factory (scheduler) -> ReactAgent, or an "
                    "agent on a TestScheduler"
                )
            return lambda: agent
        if not callable(agent):
            raise InvalidArgumentError(
                f"agent must be a ReactAgent or a factory (scheduler) -> ReactAgent, got "
                f"{described(agent)}"
            )
        if virtual_time:
            scheduler = self.scheduler = EvalScheduler()
            return lambda: _checked(agent(scheduler))
        made: list[ReactAgent] = []

        def once() -> ReactAgent:
            with self._lock:
                if not made:
                    made.append(_checked(agent(shared_scheduler("agent", 8))))
                return made[0]

        return once

    # -- the runs -------------------------------------------------------------------------------

    def runs(self) -> reactivex.Observable[RecordedRun]:
        """Every job's run, at most ``concurrency`` at once, each emitted as it ends."""

        def one(job: tuple[Any, int]) -> reactivex.Observable[RecordedRun]:
            def start(_: abc.SchedulerBase | None) -> reactivex.Observable[RecordedRun]:
                return case_run(
                    self.new_agent(),
                    job[0],
                    job[1],
                    output=self.output,
                    timeout=self.timeout,
                    running=self._running if self.scheduler is not None else None,
                )

            return reactivex.defer(start)

        return reactivex.from_iterable(self.jobs).pipe(
            ops.map(one), ops.merge(max_concurrent=self.concurrency)
        )

    def _recorded(self, run: RecordedRun) -> None:
        try:
            if self.record_to is not None:
                run = replace(run, file=str(write_run(self.record_to, run)))
            if self.scheduler is None and self.scorer.blocking(self.cases[run.case]):
                with self._lock:
                    self._open += 1
                shared_scheduler("tools", 16).schedule(lambda *_: self._score(run, True))
            else:
                self._score(run, False)
        except BaseException as error:  # our own failure: end the evaluation with it
            self._fail(error)

    def _score(self, run: RecordedRun, counted: bool) -> None:
        try:
            result = self.scorer.score(run)
            with self._lock:
                self.scored.append(result)
                self.kept.add()
            self.progress.add(result.passed)
        except BaseException as error:
            self._fail(error)
        if counted:
            self._close_one()

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            self.failure = self.failure or error
        self.done.set()
        if self._notify is not None:
            self._notify()

    def _close_one(self) -> None:
        with self._lock:
            self._open -= 1
            finished = self._open == 0
        if finished:
            self.done.set()
            if self._notify is not None:
                self._notify()

    def _subscribe(self) -> abc.DisposableBase:
        return self.runs().subscribe(self._recorded, self._fail, self._close_one)

    # -- waiting for it -------------------------------------------------------------------------

    def run(self) -> Report:
        """Run the evaluation, blocking until every run is scored."""
        with self.kept:
            return self._run()

    def _run(self) -> Report:
        subscription = self._subscribe()
        try:
            if self.scheduler is not None:
                self._drive(self.scheduler)
            else:
                self.done.wait()
        except KeyboardInterrupt:
            subscription.dispose()  # runs in flight cancelled, their connections closed
            self.progress.close()
            raise EvaluationInterrupted(self.report(interrupted=True)) from None
        except BaseException:
            subscription.dispose()
            raise
        self.progress.close()
        subscription.dispose()
        if self.failure is not None:
            raise self.failure
        return self.report()

    async def arun(self) -> Report:
        """:meth:`run`, awaiting; cancelling the awaiting task disposes the runs in flight."""
        if self.scheduler is not None:  # virtual time takes no real time: run it here
            return self.run()
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not finished.done():
                finished.set_result(None)

        def notify() -> None:
            loop.call_soon_threadsafe(settle)

        self._notify = notify
        with self.kept:
            subscription = self._subscribe()
            try:
                if not self.done.is_set():
                    await finished
            finally:
                subscription.dispose()
                self.progress.close()
        if self.failure is not None:
            raise self.failure
        return self.report()

    def _drive(self, scheduler: VirtualTimeScheduler) -> None:
        """Run virtual time until every run ended; a run still open when nothing is left to
        happen waits for something that never comes (a ``Hang``): it is ended as failed, so
        the queued runs get their turn."""
        while not self.done.is_set():
            if isinstance(scheduler, EvalScheduler):
                scheduler.drain()
            else:
                VirtualTimeScheduler.start(scheduler)
            if self.done.is_set():
                break
            if not self._end_stalled():
                raise RuntimeError("the evaluation stopped with no run in flight")  # a bug

    def _end_stalled(self) -> bool:
        """End the runs in flight as stalled; False when there were none."""
        stalled = list(self._running.values())
        for stop in stalled:
            stop(
                "the run waited for something that never came: nothing was left to happen "
                "in virtual time (give evaluate() a timeout)"
            )
        return bool(stalled)

    # -- the report -----------------------------------------------------------------------------

    def report(self, *, interrupted: bool = False) -> Report:
        """The runs scored so far, in dataset order."""
        with self._lock:
            scored = list(self.scored)
        scored.sort(key=lambda r: (self.order.get(r.case, len(self.order)), r.repeat))
        by_case: dict[str, list[RunResult]] = {}
        for result in scored:
            by_case.setdefault(result.case, []).append(result)
        return Report(
            (CaseResult(name, tuple(runs)) for name, runs in by_case.items()),
            name=self.dataset.name,
            interrupted=interrupted,
        )


def _checked(agent: Any) -> ReactAgent:
    if not isinstance(agent, ReactAgent):
        raise InvalidArgumentError(
            f"the agent factory must return a ReactAgent, got {described(agent)}"
        )
    return agent
