"""What every evaluator is and returns: :class:`Evaluator` and :class:`EvalResult`.

An evaluator scores one recorded run (an :class:`~rxreact.evals.EvalContext`)::

    run ──► events, times, result ──► EvalContext ──► evaluator(ctx) ──► EvalResult
                                                       bool | float | str | EvalResult

A ``bool`` is pass/fail, a ``float`` a score in [0, 1] (passing from ``0.5``, or the
evaluator's own threshold), a ``str`` a label (informational: it passes). A plain function
``(ctx) -> ...``, sync or ``async def``, is an evaluator too; the built-ins are frozen
dataclasses whose fields are their constructor's arguments, so a dataset file can name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from rxreact.messages import Usage

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rxreact.evals._context import EvalContext

__all__ = ["EvalResult", "EvalValue", "Evaluator", "EvaluatorLike", "ResultKind"]

EvalValue: TypeAlias = bool | float | str
"""What an evaluator decides: pass/fail, a score in [0, 1], or a label."""

ResultKind = Literal["assertion", "score", "label"]


@dataclass(frozen=True)
class EvalResult:
    """One evaluator's verdict on one run.

    Args:
        value: ``True``/``False`` (an assertion), a score in [0, 1], or a label.
        reason: why, in words a person reads in the report.
        passed: whether the run passes this evaluator; by default ``value`` for an assertion,
            ``value >= threshold`` for a score, ``True`` for a label, ``False`` on an error.
        threshold: the score from which a score passes.
        usage: what the evaluator's own model requests used (an ``LLMJudge``'s).
        error: set when the evaluator raised: ``"TypeError: ..."`` (the run fails it).
        name: the evaluator's name in the report (set by the runner).
    """

    value: EvalValue
    reason: str = ""
    passed: bool | None = None  # resolved in __post_init__: never None afterwards
    threshold: float = 0.5
    usage: Usage | None = None
    error: str | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if self.passed is None:
            value = self.value
            if self.error is not None:
                passed = False
            elif isinstance(value, bool):
                passed = value
            elif isinstance(value, int | float):
                passed = value >= self.threshold
            else:
                passed = True
            object.__setattr__(self, "passed", passed)

    @property
    def kind(self) -> ResultKind:
        """``assertion`` (a bool), ``score`` (a number) or ``label`` (a str)."""
        if isinstance(self.value, bool):
            return "assertion"
        return "score" if isinstance(self.value, int | float) else "label"

    @property
    def score(self) -> float | None:
        """The value as a number: 1.0/0.0 for an assertion, the score, ``None`` for a label."""
        if isinstance(self.value, bool):
            return 1.0 if self.value else 0.0
        return float(self.value) if isinstance(self.value, int | float) else None


class Evaluator:
    """Base class of the built-in evaluators (frozen dataclasses; see the module doc).

    A subclass implements :meth:`evaluate`. ``blocking = True`` marks one that waits on the
    network (``LLMJudge``): the runner calls it on a thread where waiting is allowed.
    """

    blocking: ClassVar[bool] = False

    @property
    def name(self) -> str:
        """The evaluator's name in reports: its class name."""
        return type(self).__name__

    def evaluate(self, ctx: EvalContext) -> EvalResult | EvalValue:
        """Score one run."""
        raise NotImplementedError

    def __call__(self, ctx: EvalContext) -> EvalResult | EvalValue:
        return self.evaluate(ctx)


Verdict: TypeAlias = "EvalResult | EvalValue"
EvaluatorLike: TypeAlias = "Evaluator | Callable[[EvalContext], Verdict | Awaitable[Verdict]]"
"""An :class:`Evaluator`, or a function of the context returning (or awaiting) a verdict."""


def evaluator_name(evaluator: Any) -> str:
    """How an evaluator is named in a report: a built-in's class, a function's ``__name__``."""
    if isinstance(evaluator, Evaluator):
        return evaluator.name
    return str(getattr(evaluator, "__name__", None) or type(evaluator).__name__)
