"""The built-in evaluators, and :data:`REGISTRY` (their names, as dataset files write them).

::

    answer      EqualsExpected  Equals  Contains  Matches  IsInstance  OutputValid
    trajectory  ToolCalls  MaxRounds  MaxToolCalls  NoErrors  NotForced  MaxTokens
    time        MaxDuration  FirstTokenWithin
    model       LLMJudge
"""

from __future__ import annotations

from rxreact.evals.evaluators._base import (
    EvalResult,
    Evaluator,
    EvaluatorLike,
    EvalValue,
    evaluator_name,
)
from rxreact.evals.evaluators.answer import (
    Contains,
    Equals,
    EqualsExpected,
    IsInstance,
    Matches,
    OutputValid,
)
from rxreact.evals.evaluators.judge import LLMJudge
from rxreact.evals.evaluators.timing import FirstTokenWithin, MaxDuration
from rxreact.evals.evaluators.trajectory import (
    MaxRounds,
    MaxTokens,
    MaxToolCalls,
    NoErrors,
    NotForced,
    ToolCalls,
)

__all__ = [
    "REGISTRY",
    "Contains",
    "Equals",
    "EqualsExpected",
    "EvalResult",
    "EvalValue",
    "Evaluator",
    "EvaluatorLike",
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
    "ToolCalls",
    "evaluator_name",
]

REGISTRY: dict[str, type[Evaluator]] = {
    cls.__name__: cls
    for cls in (
        EqualsExpected,
        Equals,
        Contains,
        Matches,
        IsInstance,
        OutputValid,
        ToolCalls,
        MaxRounds,
        MaxToolCalls,
        NoErrors,
        NotForced,
        MaxTokens,
        MaxDuration,
        FirstTokenWithin,
        LLMJudge,
    )
}
"""Every built-in evaluator by its class name (the name a dataset file uses)."""
