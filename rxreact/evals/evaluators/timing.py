"""Evaluators of time, on the run's own clock: wall time for a live run, virtual time for a
run on a ``TestScheduler`` (and for a recording re-scored: its recorded offsets).

::

    run:        |--round 1--|--tool--|--round 2: t t t t--|
                0           ^ first token of the answer round ^ end
    FirstTokenWithin(2.0)   first text delta of the answer, at most 2 s after the start
    MaxDuration(5.0)        the end at most 5 s after the start
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from rxreact.evals.evaluators._base import EvalResult, Evaluator

if TYPE_CHECKING:
    from rxreact.evals._context import EvalContext

__all__ = ["FirstTokenWithin", "MaxDuration"]


def _seconds(value: float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


@dataclass(frozen=True)
class MaxDuration(Evaluator):
    """The run took at most ``seconds`` (a number or a ``timedelta``)."""

    seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", _seconds(self.seconds))

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run took at most ``seconds``, on its own clock."""
        duration = ctx.duration
        if duration is None:
            return EvalResult(False, "the recording ends before the run did")
        verdict = "within" if duration <= self.seconds else "over"
        return EvalResult(
            duration <= self.seconds, f"{duration:.3g} s: {verdict} {self.seconds:g} s"
        )


@dataclass(frozen=True)
class FirstTokenWithin(Evaluator):
    """The answer's first text delta came at most ``seconds`` after the run started."""

    seconds: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", _seconds(self.seconds))

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the answer's first text delta came within ``seconds``."""
        first = ctx.first_token
        if first is None:
            return EvalResult(False, "no answer text came")
        verdict = "within" if first <= self.seconds else "over"
        return EvalResult(
            first <= self.seconds, f"first token at {first:.3g} s: {verdict} {self.seconds:g} s"
        )
