"""Evals: run a dataset of cases once, record every run, score it, re-score it offline in
virtual time, and compare reports.

::

    import tempfile

    from rxreact import OpenAIChatModel, ReactAgent, tool
    from rxreact.evals import Case, Contains, Dataset, MaxRounds, ToolCalls, rescore

    @tool
    def get_weather(city: str) -> str:
        \"\"\"Current weather for a city.\"\"\"
        return f"{city}: sunny, 21°C"

    dataset = Dataset(
        [Case("paris", "Weather in Paris?"), Case("oslo", "Weather in Oslo?")],
        evaluators=[Contains("sunny"), ToolCalls(["get_weather"]), MaxRounds(2)],
    )
    runs = tempfile.mkdtemp()
    with OpenAIChatModel() as model:          # a factory and virtual_time=True work too
        report = dataset.evaluate(ReactAgent(model, [get_weather]), record_to=runs)
    print(report)                             # the table, averages, latencies, usage
    report.assert_passed(min_pass_rate=1.0)   # what a pytest test calls
    offline = rescore(runs, [Contains("21°C")])   # no request to the model
    assert offline.passed

A run is data: its typed events with their ``seq`` and times. Evaluators are functions of
that record, so :func:`rescore` scores recordings again without calling the agent's model,
replaying them in virtual time at their recorded offsets, and ``report.compare(baseline)``
diffs two event streams down to the first event where they part.
"""

from __future__ import annotations

from rxreact.evals._case import Case
from rxreact.evals._compare import CaseChange, Comparison
from rxreact.evals._context import EvalContext
from rxreact.evals._dataset import Dataset
from rxreact.evals._report import CaseResult, Failure, Report, RunResult
from rxreact.evals._rescore import rescore
from rxreact.evals._run import RecordedRun, ToolCallMade
from rxreact.evals.errors import DatasetError, EvaluationInterrupted, RecordingWarning
from rxreact.evals.evaluators import (
    REGISTRY,
    Contains,
    Equals,
    EqualsExpected,
    EvalResult,
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
    "CaseChange",
    "CaseResult",
    "Comparison",
    "Contains",
    "Dataset",
    "DatasetError",
    "Equals",
    "EqualsExpected",
    "EvalContext",
    "EvalResult",
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
