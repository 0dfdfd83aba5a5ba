"""Comparing a report with a baseline: which cases got worse or better, and where each
worse one first did something else.

::

    compare(report, baseline)
        regressed    pass rate lower than the baseline's     with the first divergence:
        improved     pass rate higher                        "round 2: called `search(q='oslo')`,
        appeared     only in the report                       baseline called `get_weather(...)`"
        disappeared  only in the baseline                    and both runs' marble lines
        deltas       each evaluator's mean score, report minus baseline
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rxreact.evals._replay import recording_of
from rxreact.evals._trajectory import first_divergence

if TYPE_CHECKING:
    from rxreact.evals._report import CaseResult, Report, RunResult
    from rxreact.evals._run import RecordedRun

__all__ = ["CaseChange", "Comparison", "assert_passed", "compare", "marble_lines"]


@dataclass(frozen=True)
class CaseChange:
    """A case whose pass rate moved."""

    case: str
    pass_rate: float
    """The case's pass rate in the report."""
    baseline_pass_rate: float
    """Its pass rate in the baseline."""
    reasons: tuple[str, ...] = ()
    """Why its runs fail now (for a regression)."""
    divergence: str | None = None
    """The first step at which a failing run parted from the baseline's run, in words."""
    marbles: str = field(default="", repr=False)
    """The two runs' marble lines, one above the other."""
    run: RecordedRun | None = field(default=None, repr=False)
    """The failing run the divergence was found in."""
    baseline_run: RecordedRun | None = field(default=None, repr=False)
    """The baseline's run it was held against."""

    def __str__(self) -> str:
        head = f"{self.case}: pass rate {self.baseline_pass_rate:.2f} -> {self.pass_rate:.2f}"
        lines = [head]
        if self.divergence:
            lines.append(f"  first divergence: {self.divergence}")
        lines += [f"  {reason}" for reason in self.reasons]
        if self.marbles:
            lines += ["  " + line for line in self.marbles.splitlines()]
        return "\n".join(lines)


@dataclass(frozen=True)
class Comparison:
    """What changed from a baseline report to this one (``report.compare(baseline)``)."""

    regressed: tuple[CaseChange, ...]
    improved: tuple[CaseChange, ...]
    appeared: tuple[str, ...]
    disappeared: tuple[str, ...]
    deltas: dict[str, float]
    """Each evaluator's mean score in the report minus the baseline's (both had it)."""
    pass_rate: float
    baseline_pass_rate: float

    def _repr_html_(self) -> str:
        from rxreact.evals._html import comparison_html

        return comparison_html(self)

    def __str__(self) -> str:
        lines = [
            f"pass rate {self.baseline_pass_rate:.1%} -> {self.pass_rate:.1%}: "
            f"{len(self.regressed)} regressed, {len(self.improved)} improved, "
            f"{len(self.appeared)} appeared, {len(self.disappeared)} disappeared"
        ]
        if self.deltas:
            lines.append(
                "score deltas: " + ", ".join(f"{n} {d:+.2f}" for n, d in self.deltas.items())
            )
        if self.regressed:
            lines.append("regressed")
            lines += ["  " + line for c in self.regressed for line in str(c).splitlines()]
        if self.improved:
            lines.append("improved: " + ", ".join(c.case for c in self.improved))
        if self.appeared:
            lines.append("appeared: " + ", ".join(self.appeared))
        if self.disappeared:
            lines.append("disappeared: " + ", ".join(self.disappeared))
        return "\n".join(lines)


def compare(report: Report, baseline: Report) -> Comparison:
    """See :meth:`Report.compare`."""
    ours = {c.name: c for c in report.cases}
    theirs = {c.name: c for c in baseline.cases}
    regressed, improved = [], []
    for name, case in ours.items():
        base = theirs.get(name)
        if base is None:
            continue
        if case.pass_rate < base.pass_rate:
            regressed.append(_regression(case, base))
        elif case.pass_rate > base.pass_rate:
            improved.append(CaseChange(name, case.pass_rate, base.pass_rate))
    now, before = report.averages(), baseline.averages()
    return Comparison(
        regressed=tuple(regressed),
        improved=tuple(improved),
        appeared=tuple(n for n in ours if n not in theirs),
        disappeared=tuple(n for n in theirs if n not in ours),
        deltas={n: now[n] - before[n] for n in now if n in before},
        pass_rate=report.pass_rate,
        baseline_pass_rate=baseline.pass_rate,
    )


def _regression(case: CaseResult, base: CaseResult) -> CaseChange:
    failing = next((r for r in case.runs if not r.passed), case.runs[0])
    reference = _partner(failing, base)
    divergence = first_divergence(failing.recording, reference.recording)
    return CaseChange(
        case.name,
        case.pass_rate,
        base.pass_rate,
        reasons=failing.reasons,
        divergence=divergence or "the same trajectory: only the scoring differs",
        marbles=marble_lines(failing, reference),
        run=failing.recording,
        baseline_run=reference.recording,
    )


def _partner(run: RunResult, base: CaseResult) -> RunResult:
    """The baseline run to hold ``run`` against: a passing one of the same repeat, else any
    passing one, else the same repeat's."""
    same = [r for r in base.runs if r.repeat == run.repeat]
    passing = [r for r in same if r.passed] or [r for r in base.runs if r.passed]
    return (passing or same or list(base.runs))[0]


def marble_lines(run: RunResult, baseline: RunResult, width: int = 60) -> str:
    """Both runs' marble lines, lane by lane, the run above the baseline, on one time scale."""
    ours, theirs = recording_of(run.recording), recording_of(baseline.recording)
    longest = max(ours.duration, theirs.duration)
    unit = longest / width if longest > 0 else 1.0
    lanes = [lane for lane in ours.lanes if lane in theirs.lanes] + [
        lane
        for lane in (*ours.lanes, *theirs.lanes)
        if lane not in ours.lanes or lane not in theirs.lanes
    ]
    lines = [f"marbles (one character = {unit:.3g} s)"]
    for lane in dict.fromkeys(lanes):
        lines.append(f"{lane:<11} now       {_line(ours, lane, unit)}")
        lines.append(f"{'':<11} baseline  {_line(theirs, lane, unit)}")
    return "\n".join(lines)


def _line(recording: object, lane: str, unit: float) -> str:
    from rxreact.marbles.recording import Recording

    assert isinstance(recording, Recording)
    if not recording.lane(lane):
        return "(none)"
    return recording.to_marbles(lane, unit=unit)


def assert_passed(report: Report, min_pass_rate: float, baseline: Report | None) -> None:
    """See :meth:`Report.assert_passed`."""
    problems = []
    if report.pass_rate < min_pass_rate:
        problems.append(
            f"pass rate {report.pass_rate:.1%} is below {min_pass_rate:.1%}; failing cases:"
        )
        problems += [f"  {failure}" for failure in report.failures]
    if baseline is not None:
        comparison = compare(report, baseline)
        if comparison.regressed:
            problems.append(f"{len(comparison.regressed)} case(s) regressed against the baseline:")
            problems += ["  " + line for c in comparison.regressed for line in str(c).splitlines()]
    if problems:
        raise AssertionError("\n".join(problems))
