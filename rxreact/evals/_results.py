"""The results a report is made of: :class:`RunResult` (one scored run), :class:`CaseResult`
(every run of a case: pass rate, pass@k, pass^k) and :class:`Failure`.

::

    CaseResult("paris") ── runs ── RunResult(repeat 0): passed, results {evaluator: EvalResult}
                                └─ RunResult(repeat 1) ...
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rxreact.evals._run import RecordedRun
from rxreact.evals.evaluators._base import EvalResult
from rxreact.messages import Usage

__all__ = ["CaseResult", "Failure", "RunResult", "sum_usage"]


@dataclass(frozen=True, eq=False)
class RunResult:
    """One scored run of a case."""

    recording: RecordedRun
    """The run as recorded (events, times, result)."""
    results: Mapping[str, EvalResult]
    """Each evaluator's verdict, by evaluator name, in evaluation order."""
    passed: bool
    """It answered and every evaluator passed."""

    def __repr__(self) -> str:
        state = "passed" if self.passed else "failed"
        return f"RunResult({self.case!r}, repeat={self.repeat}, {state})"

    @property
    def case(self) -> str:
        return self.recording.case

    @property
    def repeat(self) -> int:
        return self.recording.repeat

    @property
    def duration(self) -> float | None:
        """Seconds the run took, on its clock."""
        return self.recording.duration

    @property
    def first_token(self) -> float | None:
        """Seconds to the answer's first text delta, on the run's clock."""
        return self.recording.first_token

    @property
    def usage(self) -> Usage | None:
        """What the agent's model requests used."""
        return self.recording.usage

    @property
    def judge_usage(self) -> Usage | None:
        """What the evaluators' own model requests (``LLMJudge``) used."""
        return sum_usage(r.usage for r in self.results.values())

    @property
    def error(self) -> str | None:
        """Why the run failed (an error or a timeout), ``None`` when it answered."""
        return self.recording.error

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why it failed: the run's error, then each failing evaluator's reason."""
        reasons = [f"error: {self.error}"] if self.error else []
        reasons += [f"{name}: {r.reason}" for name, r in self.results.items() if not r.passed]
        return tuple(reasons)


@dataclass(frozen=True, eq=False)
class CaseResult:
    """Every run of one case."""

    name: str
    runs: tuple[RunResult, ...]
    """One per repeat, in repeat order."""

    def __repr__(self) -> str:
        return f"CaseResult({self.name!r}, {len(self.runs)} run(s), pass_rate={self.pass_rate:g})"

    @property
    def pass_rate(self) -> float:
        """The share of its runs that passed."""
        return sum(r.passed for r in self.runs) / len(self.runs) if self.runs else 0.0

    @property
    def passed(self) -> bool:
        """All its runs passed."""
        return bool(self.runs) and all(r.passed for r in self.runs)

    def pass_at(self, k: int) -> float:
        """pass@k: the chance that at least one of ``k`` runs passes, estimated from the runs
        made (the unbiased estimator, ``k <= len(runs)``)."""
        n, c = len(self.runs), sum(r.passed for r in self.runs)
        _check_k(k, n)
        return 1.0 - math.comb(n - c, k) / math.comb(n, k)

    def pass_hat(self, k: int) -> float:
        """pass^k: the chance that all of ``k`` runs pass, estimated from the runs made."""
        n, c = len(self.runs), sum(r.passed for r in self.runs)
        _check_k(k, n)
        return math.comb(c, k) / math.comb(n, k)

    @property
    def pass_at_k(self) -> float:
        """pass@k for k = the number of runs: 1.0 when any run passed."""
        return self.pass_at(len(self.runs)) if self.runs else 0.0

    @property
    def pass_hat_k(self) -> float:
        """pass^k for k = the number of runs: 1.0 when every run passed."""
        return self.pass_hat(len(self.runs)) if self.runs else 0.0

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why its failing runs failed (``run 2: ...`` when it ran more than once)."""
        many = len(self.runs) > 1
        return tuple(
            f"run {r.repeat + 1}: {reason}" if many else reason
            for r in self.runs
            if not r.passed
            for reason in r.reasons
        )


def _check_k(k: int, n: int) -> None:
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of runs ({n}), got {k}")


@dataclass(frozen=True)
class Failure:
    """A failing case and why (``report.failures``)."""

    case: str
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.case}: " + "; ".join(self.reasons)


def sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """The sum of the usages given (``None`` when none is)."""
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = usage + total
    return total
