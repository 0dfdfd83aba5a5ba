"""What an evaluation found: :class:`Report` of :class:`CaseResult` of :class:`RunResult`.

::

    Report ── cases ── CaseResult("paris") ── runs ── RunResult(repeat 0): passed, results
           │                                       └─ RunResult(repeat 1) ...
           └─ runs: every RecordedRun (the recordings), in case and repeat order

A run passes when it answered and every evaluator passed; a case when all its runs did. The
report's ``pass_rate`` is the share of all runs that passed. Rendering (the table, the HTML),
files, comparisons and re-scoring live in modules of their own.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any

from rxreact.evals._run import RecordedRun
from rxreact.evals.evaluators._base import EvalResult
from rxreact.messages import Usage

if TYPE_CHECKING:
    from rxreact.evals._compare import Comparison

__all__ = ["CaseResult", "Failure", "Report", "RunResult", "percentile"]


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
        return _sum(r.usage for r in self.results.values())

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


class Report:
    """The result of an evaluation (or a re-scoring): cases, runs, and what they add up to.

    ``print(report)`` shows the table; in Jupyter it renders as HTML with each case's marble
    diagram. See :meth:`compare`, :meth:`assert_passed`, :meth:`rescore`, :meth:`to_file`.
    """

    def __init__(
        self,
        cases: Iterable[CaseResult],
        *,
        name: str | None = None,
        evaluators: Sequence[str] = (),
        interrupted: bool = False,
    ) -> None:
        self.cases: tuple[CaseResult, ...] = tuple(cases)
        """One per case, in the dataset's order."""
        self.name: str | None = name
        """The dataset's name."""
        self.evaluators: tuple[str, ...] = tuple(evaluators) or _evaluator_names(self.cases)
        """The evaluators' names, in order."""
        self.interrupted: bool = interrupted
        """True for the partial report of an interrupted evaluation."""

    def __repr__(self) -> str:
        named = f"{self.name!r}, " if self.name else ""
        return (
            f"Report({named}{len(self.cases)} cases, {len(self.runs)} runs, "
            f"pass_rate={self.pass_rate:.3g})"
        )

    def __str__(self) -> str:
        from rxreact.evals._table import report_text

        return report_text(self)

    def _repr_html_(self) -> str:
        from rxreact.evals._html import report_html

        return report_html(self)

    def case(self, name: str) -> CaseResult:
        """The case named ``name``."""
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)

    @property
    def runs(self) -> tuple[RecordedRun, ...]:
        """Every run as recorded, in case and repeat order."""
        return tuple(r.recording for c in self.cases for r in c.runs)

    @property
    def run_results(self) -> tuple[RunResult, ...]:
        """Every scored run, in case and repeat order."""
        return tuple(r for c in self.cases for r in c.runs)

    @property
    def pass_rate(self) -> float:
        """The share of all runs that passed (``min_pass_rate`` is held against it)."""
        runs = self.run_results
        return sum(r.passed for r in runs) / len(runs) if runs else 0.0

    @property
    def passed(self) -> bool:
        """Every run of every case passed."""
        return all(c.passed for c in self.cases)

    @property
    def failures(self) -> tuple[Failure, ...]:
        """The failing cases, each with its reasons."""
        return tuple(Failure(c.name, c.reasons) for c in self.cases if not c.passed)

    def averages(self) -> dict[str, float]:
        """Each evaluator's mean score over all runs (an assertion counts 1 or 0; labels are
        left out)."""
        sums: dict[str, list[float]] = {}
        for run in self.run_results:
            for name, result in run.results.items():
                score = result.score
                if score is not None:
                    sums.setdefault(name, []).append(score)
        return {name: sum(v) / len(v) for name in self.evaluators if (v := sums.get(name))}

    def latency(self, which: str = "duration", q: float = 50) -> float | None:
        """The ``q``-th percentile of the runs' ``duration`` or ``first_token`` (seconds)."""
        values = [getattr(r, which) for r in self.run_results]
        return percentile([v for v in values if v is not None], q)

    @property
    def usage(self) -> Usage | None:
        """What the agent's model requests used, over every run."""
        return _sum(r.usage for r in self.run_results)

    @property
    def judge_usage(self) -> Usage | None:
        """What the evaluators' model requests used (``LLMJudge``), over every run."""
        return _sum(r.judge_usage for r in self.run_results)

    # -- more, in modules of their own ----------------------------------------------------------

    def compare(self, baseline: Report) -> Comparison:
        """This report against ``baseline``: regressed, improved, appeared and disappeared
        cases, score deltas, and where each regressed case's trajectory parted from the
        baseline's. See :class:`~rxreact.evals.Comparison`."""
        from rxreact.evals._compare import compare

        return compare(self, baseline)

    def assert_passed(self, min_pass_rate: float = 1.0, baseline: Report | None = None) -> None:
        """Raise an ``AssertionError`` listing each failing (or, against ``baseline``,
        regressed) case with its reason, when the pass rate is below ``min_pass_rate`` or
        a case regressed."""
        from rxreact.evals._compare import assert_passed

        assert_passed(self, min_pass_rate, baseline)

    def rescore(self, evaluators: Sequence[Any] | Any) -> Report:
        """These runs scored again by ``evaluators`` (a list, or a ``Dataset`` whose cases'
        and dataset's evaluators are used), without running anything: a new report."""
        from rxreact.evals._rescore import rescore_runs

        return rescore_runs(self.runs, evaluators, name=self.name)

    def to_file(self, path: str | PathLike[str]) -> None:
        """Write the report, its runs' events included, as JSON."""
        from rxreact.evals._report_file import save_report

        save_report(self, path)

    @classmethod
    def from_file(cls, path: str | PathLike[str]) -> Report:
        """Read a report :meth:`to_file` wrote."""
        from rxreact.evals._report_file import load_report

        return load_report(path)


def _evaluator_names(cases: Sequence[CaseResult]) -> tuple[str, ...]:
    names: dict[str, None] = {}
    for case in cases:
        for run in case.runs:
            names.update(dict.fromkeys(run.results))
    return tuple(names)


def _sum(usages: Iterable[Usage | None]) -> Usage | None:
    total: Usage | None = None
    for usage in usages:
        if usage is not None:
            total = usage + total
    return total


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
