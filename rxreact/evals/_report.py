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
from collections.abc import Iterable, Sequence
from os import PathLike
from typing import TYPE_CHECKING, Any

from rxreact.evals._results import CaseResult, Failure, RunResult, sum_usage
from rxreact.evals._run import RecordedRun
from rxreact.messages import Usage

if TYPE_CHECKING:
    from rxreact.evals._compare import Comparison

__all__ = ["CaseResult", "Failure", "Report", "RunResult", "percentile"]


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

    def pass_at(self, k: int) -> float:
        """pass@k over the cases: the mean of each case's :meth:`CaseResult.pass_at`."""
        return sum(c.pass_at(k) for c in self.cases) / len(self.cases) if self.cases else 0.0

    def pass_hat(self, k: int) -> float:
        """pass^k over the cases: the mean of each case's :meth:`CaseResult.pass_hat`."""
        return sum(c.pass_hat(k) for c in self.cases) / len(self.cases) if self.cases else 0.0

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
        return sum_usage(r.usage for r in self.run_results)

    @property
    def judge_usage(self) -> Usage | None:
        """What the evaluators' model requests used (``LLMJudge``), over every run."""
        return sum_usage(r.judge_usage for r in self.run_results)

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


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (linear interpolation), ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
