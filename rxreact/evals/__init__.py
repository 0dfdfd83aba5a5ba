"""Evals: run a dataset of cases once, record every run, score it, re-score it offline in
virtual time, and compare reports.

::

    from rxreact.evals import Case, Contains, Dataset, MaxRounds, ToolCalls

    dataset = Dataset(
        [Case("paris", "Weather in Paris?", expected="sunny")],
        evaluators=[Contains("sunny", case_sensitive=False), ToolCalls(["get_weather"]),
                    MaxRounds(2)],
    )
    report = dataset.evaluate(agent, record_to="runs/")   # or a factory, virtual_time=True
    print(report)                                          # the table, averages, latencies
    report.assert_passed(min_pass_rate=0.9, baseline=Report.from_file("baseline.json"))

A run is data: its typed events with their ``seq`` and times. Evaluators are functions of
that record, so :func:`rescore` scores recordings again without calling the agent's model,
replaying them in virtual time at their recorded offsets, and ``report.compare(baseline)``
diffs two event streams down to the first event where they part.
"""

from __future__ import annotations

from rxreact.evals._case import Case
from rxreact.evals._context import EvalContext
from rxreact.evals._dataset import Dataset
from rxreact.evals._report import CaseResult, Failure, Report, RunResult
from rxreact.evals._rescore import rescore
from rxreact.evals._run import RecordedRun, ToolCallMade
from rxreact.evals.errors import DatasetError, EvaluationInterrupted, RecordingWarning
from rxreact.evals.evaluators import (
    REGISTRY,
    Contains,
    EvalResult,
    Equals,
    EqualsExpected,
    Evaluator,
    FirstTokenWithin,
    IsInstance,
    LLMJudge,
    Matches,
    MaxDuration,
    MaxRounds,
    MaxTokens,
    MaxToolCalls,
    NoErrors,
    NotForced,
    OutputValid,
    ToolCalls,
)

__all__ = [
    "REGISTRY",
    "Case",
    "CaseResult",
    "Contains",
    "Dataset",
    "DatasetError",
    "EvalContext",
    "EvalResult",
    "Equals",
    "EqualsExpected",
    "EvaluationInterrupted",
    "Evaluator",
    "Failure",
    "FirstTokenWithin",
    "IsInstance",
    "LLMJudge",
    "Matches",
    "MaxDuration",
    "MaxRounds",
    "MaxTokens",
    "MaxToolCalls",
    "NoErrors",
    "NotForced",
    "OutputValid",
    "RecordedRun",
    "RecordingWarning",
    "Report",
    "RunResult",
    "ToolCallMade",
    "ToolCalls",
    "rescore",
]
