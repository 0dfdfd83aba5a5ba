"""Scoring one recorded run: every evaluator of its case, each failure its own.

::

    RecordedRun ──► EvalContext ──► [evaluator(ctx) for the dataset's, then the case's]
                                     bool | float | str | EvalResult | an awaitable of one
                                 ──► RunResult(passed = answered and every result passed)

An evaluator that raises gives an :class:`EvalResult` with ``error`` set (that evaluator
fails on that run); the others still run. An ``async def`` evaluator is awaited on rxreact's
I/O loop, so this is a blocking function: the runner calls it inline for the built-ins and
on the tools' pool for the others (see :meth:`Scorer.blocking`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rxreact.evals._case import Case
from rxreact.evals._context import EvalContext
from rxreact.evals._report import RunResult
from rxreact.evals._run import RecordedRun
from rxreact.evals.evaluators._base import EvalResult, Evaluator, evaluator_name

__all__ = ["Scorer", "as_result"]


class Scorer:
    """The evaluators of every case of a dataset, named once, and how to apply them.

    Args:
        evaluators: those of every case (the dataset's).
        cases: the cases by name (each adds its own evaluators after the dataset's).
    """

    def __init__(self, evaluators: Sequence[Any], cases: Mapping[str, Case]) -> None:
        self.evaluators = tuple(evaluators)
        self.cases = cases
        self._named: dict[str, tuple[tuple[str, Any], ...]] = {}
        self._blocking: dict[str, bool] = {}

    def named(self, case: Case) -> tuple[tuple[str, Any], ...]:
        """``(name, evaluator)`` for ``case``: the dataset's then its own, names made unique
        with ``_2``, ``_3``... (pydantic-evals' way)."""
        named = self._named.get(case.name)
        if named is None:
            seen: dict[str, int] = {}
            items = []
            for evaluator in (*self.evaluators, *case.evaluators):
                name = evaluator_name(evaluator)
                seen[name] = seen.get(name, 0) + 1
                items.append((name if seen[name] == 1 else f"{name}_{seen[name]}", evaluator))
            named = self._named[case.name] = tuple(items)
        return named

    def blocking(self, case: Case) -> bool:
        """Whether scoring ``case`` may wait (an LLM judge, a custom function): then it must
        not run on the agent's event threads."""
        blocking = self._blocking.get(case.name)
        if blocking is None:
            blocking = self._blocking[case.name] = any(
                not isinstance(ev, Evaluator) or ev.blocking for _, ev in self.named(case)
            )
        return blocking

    def score(self, run: RecordedRun) -> RunResult:
        """Every evaluator's verdict on ``run`` (blocking for async and judge evaluators)."""
        case = self.cases[run.case]
        ctx = EvalContext(case, run)
        results = {name: _apply(name, evaluator, ctx) for name, evaluator in self.named(case)}
        passed = run.error is None and all(r.passed for r in results.values())
        return RunResult(run, results, passed)


def _apply(name: str, evaluator: Any, ctx: EvalContext) -> EvalResult:
    try:
        value = evaluator(ctx)
        if inspect.isawaitable(value):
            value = _await(value)
        return as_result(name, value)
    except Exception as error:
        return EvalResult(
            False,
            f"the evaluator failed: {type(error).__name__}: {error}",
            error=f"{type(error).__name__}: {error}",
            name=name,
        )


def _await(awaitable: Any) -> Any:
    """An async evaluator's verdict, awaited on rxreact's I/O loop (shared with async tools)."""
    from rxreact.model.http._aio import io_loop

    async def wrapped() -> Any:
        return await awaitable

    return asyncio.run_coroutine_threadsafe(wrapped(), io_loop()).result()


def as_result(name: str, value: Any) -> EvalResult:
    """What an evaluator returned, as an :class:`EvalResult` named ``name``."""
    if isinstance(value, EvalResult):
        return value if value.name == name else replace(value, name=name)
    if isinstance(value, bool):
        return EvalResult(value, "passed" if value else "failed", name=name)
    if isinstance(value, int | float):
        if not 0 <= value <= 1:
            raise ValueError(f"a score must be in [0, 1], got {value!r}")
        return EvalResult(float(value), f"score {value:.2f}", name=name)
    if isinstance(value, str):
        return EvalResult(value, value, name=name)
    raise TypeError(
        f"an evaluator returns a bool, a float, a str or an EvalResult, got {type(value).__name__}"
    )
