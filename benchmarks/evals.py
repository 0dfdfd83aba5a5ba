"""Workload 17: evaluations (``rxreact.evals``), their overhead, a peer, and re-scoring.

::

    a  1,000 scripted two-round cases in virtual time (a tool round after a 1 s pause, its tool
       a marble line "--s|" 0.25 s a character, then 8 text chunks 0.25 s apart), with five
       evaluators each: dataset.evaluate(factory, virtual_time=True) against the same 1,000
       runs subscribed by hand on one TestScheduler with nothing recorded or scored.
    b  the same 1,000 cases with pydantic-evals on a pydantic-ai agent with its TestModel (a
       tool round, then the answer; no latency at all), five evaluators each, side by side.
    c  re-scoring the 1,000 runs of (a), recorded to a directory, with five deterministic
       evaluators: rxreact.evals.rescore(runs_dir, evaluators).

Wall time, best of ``rounds`` (each side alternating with the other, so a busy neighbour
weighs on both). ``python -m benchmarks.evals [--quick] [--cases N]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex.testing import TestScheduler

from benchmarks._harness import Table

Clock = tuple[float, float]
"""(wall seconds, CPU seconds of the process: every thread's)."""


def _now() -> Clock:
    return time.perf_counter(), time.process_time()


def _since(start: Clock) -> Clock:
    wall, cpu = _now()
    return wall - start[0], cpu - start[1]


CITIES = ("Paris", "Oslo", "Rome", "Lima", "Cairo", "Tokyo", "Quito", "Perth")


def _question(i: int) -> str:
    return f"What is the weather in {CITIES[i % len(CITIES)]}? (case {i})"


def _answer(city: str) -> str:
    return f"It is sunny in {city}, 21 °C, with a light breeze from the west today."


# -- rxreact ------------------------------------------------------------------------------------


def _rxreact_factory() -> Callable[[Any], Any]:
    from rxreact import ReactAgent, tool
    from rxreact.model.scripted.model import ScriptedModel
    from rxreact.model.scripted.replies import Pause, text_reply, tool_call_reply

    @tool
    def get_weather(city: str) -> reactivex.Observable[str]:
        """Current weather for a city."""
        return reactivex.from_marbles("--s|", timespan=0.25, lookup={"s": f"{city}: sunny, 21 °C"})

    def script(request: Any) -> Any:
        city = next(c for c in CITIES if c in str(request.messages[0].content))
        if request.messages[-1].role == "user":
            return [Pause(1.0), *tool_call_reply(("get_weather", {"city": city}))]
        return text_reply(_answer(city), 8, interval=0.25)

    def factory(scheduler: Any) -> Any:
        return ReactAgent(ScriptedModel(script), [get_weather], scheduler=scheduler)

    return factory


def _rxreact_dataset(n: int) -> Any:
    from rxreact.evals import (
        Case,
        Contains,
        Dataset,
        EqualsExpected,
        MaxDuration,
        MaxRounds,
        ToolCalls,
    )

    cases = [
        Case(f"case-{i}", _question(i), expected=_answer(CITIES[i % len(CITIES)])) for i in range(n)
    ]
    evaluators = [
        EqualsExpected(),
        Contains("sunny"),
        ToolCalls(["get_weather"]),
        MaxRounds(2),
        MaxDuration(5.0),
    ]
    return Dataset(cases, name="bench", evaluators=evaluators)


def _rescore_evaluators() -> list[Any]:
    from rxreact.evals import Contains, MaxDuration, MaxRounds, NoErrors, ToolCalls

    return [
        Contains("sunny"),
        ToolCalls([("get_weather", {"city": lambda c: c in CITIES})]),
        MaxRounds(2),
        NoErrors(),
        MaxDuration(5.0),
    ]


def bare_runs(n: int) -> Clock:
    """The same runs without evals: each subscribed on one TestScheduler, events kept."""
    factory = _rxreact_factory()
    scheduler = TestScheduler()
    ended = [0]
    started = _now()
    for i in range(n):
        events: list[Any] = []
        factory(scheduler).stream(_question(i)).subscribe(
            events.append, lambda e: None, lambda: ended.__setitem__(0, ended[0] + 1)
        )
    scheduler.start()
    elapsed = _since(started)
    assert ended[0] == n, f"{ended[0]} of {n} runs ended"
    return elapsed


def evaluated(n: int, record_to: str | None = None) -> tuple[Clock, Any]:
    dataset = _rxreact_dataset(n)
    factory = _rxreact_factory()
    started = _now()
    report = dataset.evaluate(
        factory, virtual_time=True, concurrency=n, progress=False, record_to=record_to
    )
    elapsed = _since(started)
    assert report.pass_rate == 1.0, report.failures[:3]
    return elapsed, report


def rescored(runs_dir: str) -> tuple[Clock, Any]:
    from rxreact.evals import rescore

    evaluators = _rescore_evaluators()
    started = _now()
    report = rescore(runs_dir, evaluators)
    elapsed = _since(started)
    assert report.pass_rate == 1.0, report.failures[:3]
    return elapsed, report


# -- pydantic-evals -----------------------------------------------------------------------------


def pydantic_evals_run(n: int) -> Clock:
    """pydantic-evals on a pydantic-ai agent with TestModel: a tool round, then the answer."""
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel
    from pydantic_evals import Case, Dataset
    from pydantic_evals.evaluators import Contains, EqualsExpected, IsInstance, MaxDuration

    text = _answer("Paris")
    agent = Agent(TestModel(custom_output_text=text))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: sunny, 21 °C"

    async def task(question: str) -> str:
        result = await agent.run(question)
        return result.output

    dataset = Dataset[str, str, Any](
        name="bench",
        cases=[Case(name=f"case-{i}", inputs=_question(i), expected_output=text) for i in range(n)],
        evaluators=[
            EqualsExpected(),
            Contains("sunny"),
            IsInstance("str"),
            # wall clock, all 1,000 cases in flight at once (pydantic-evals' default): a
            # case's duration is mostly its wait, so the bound is loose
            MaxDuration(600.0),
            Contains("21 °C", as_strings=True),
        ],
    )
    started = _now()
    report = dataset.evaluate_sync(task, progress=False)
    elapsed = _since(started)
    failed = [c for c in report.cases if not all(a.value for a in c.assertions.values())]
    assert len(report.cases) == n and not failed and not report.failures, (
        failed[:1],
        report.failures[:1],
    )
    return elapsed


def _pydantic_evals_installed() -> bool:
    try:
        import pydantic_ai  # noqa: F401
        import pydantic_evals  # noqa: F401
    except ImportError:
        return False
    return True


# -- the workload -------------------------------------------------------------------------------


def run(url: str | None, quick: bool, cases: int | None = None) -> Table:
    del url  # no mock server: everything here is scripted or in-process
    n = cases or (200 if quick else 1000)
    rounds = 2 if quick else 3
    peer = _pydantic_evals_installed()
    best: dict[str, Clock] = {}

    def keep(name: str, seconds: Clock) -> None:
        wall, cpu = best.get(name, (float("inf"), float("inf")))
        best[name] = (min(wall, seconds[0]), min(cpu, seconds[1]))

    with tempfile.TemporaryDirectory(prefix="rxreact-bench-evals-") as runs_dir:
        for r in range(rounds):
            gc.collect()
            keep("bare", bare_runs(n))
            gc.collect()
            seconds, _ = evaluated(n, record_to=runs_dir if r == 0 else None)
            keep("evaluate" if r else "evaluate_recorded", seconds)
            if peer:
                gc.collect()
                keep("pydantic_evals", pydantic_evals_run(n))
            gc.collect()
            keep("rescore", rescored(runs_dir)[0])
    table = Table(
        f"17. Evals: {n} two-round cases, five evaluators each (best of {rounds})",
        ["what", "wall s", "CPU s", "CPU ms per case", "CPU ratio", "wall ratio", "target"],
    )

    def row(what: str, name: str, base: str | None, target: str) -> None:
        wall, cpu = best[name]
        ratios = ("", "") if base is None else (cpu / best[base][1], wall / best[base][0])
        table.add(what, wall, cpu, cpu / n * 1e3, *ratios, target)

    row("a. the runs alone, virtual time", "bare", None, "")
    row("a. dataset.evaluate, virtual time", "evaluate", "bare", "<= 1.2x the runs alone")
    row("a. the same, recording to a directory", "evaluate_recorded", "bare", "")
    if peer:
        row("b. pydantic-evals + pydantic-ai TestModel", "pydantic_evals", None, "")
        table.add(
            "b. rxreact's evaluate / pydantic-evals'", "", "", "",
            best["evaluate"][1] / best["pydantic_evals"][1],
            best["evaluate"][0] / best["pydantic_evals"][0], "<= 0.5x",
        )  # fmt: skip
    row("c. rescore of the recorded runs", "rescore", None, "< 2 s")
    table.notes.append("CPU: time.process_time() of the process (every thread), best of the rounds")
    table.notes.append(
        f"{len(os.sched_getaffinity(0))} cores, load average {os.getloadavg()[0]:.1f} at the end"
    )
    if not peer:
        table.notes.append("pydantic-evals is not installed (pip install -e '.[bench]'): b skipped")
    table.data = {"cases": n, "rounds": rounds, "best_wall_cpu_s": best}
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.evals", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200 cases, 2 rounds")
    parser.add_argument("--cases", type=int, default=None, help="cases (default: 1000)")
    args = parser.parse_args(argv)
    print(run(None, args.quick, args.cases).render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
