"""Evaluators of the trajectory: what the run did, read from its typed events.

::

    ToolCalls(["get_weather", ("search", {"q": "oslo"})], mode="strict")
        strict     the same calls in the same order (the calls of one round in any order:
                   they ran in parallel)
        unordered  the same calls, any order
        subset     these calls at least (others may come too)
        superset   no call beyond these (a call made more often than listed is beyond)
    MaxRounds(2)      MaxToolCalls(3)      NoErrors()      NotForced()      MaxTokens(2_000)

An expected call is a tool name, or ``(name, {argument: value})`` where only the listed
arguments are checked and each value may be a predicate (``lambda q: "oslo" in q.lower()``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rxreact.evals.evaluators._base import EvalResult, Evaluator
from rxreact.evals.evaluators._matching import ExpectedCall, expected_calls, match_calls

if TYPE_CHECKING:
    from rxreact.evals._context import EvalContext

__all__ = ["MaxRounds", "MaxTokens", "MaxToolCalls", "NoErrors", "NotForced", "ToolCalls"]

Mode = Literal["strict", "unordered", "subset", "superset"]
_MODES = ("strict", "unordered", "subset", "superset")


@dataclass(frozen=True)
class ToolCalls(Evaluator):
    """The run's tool calls are the ``expected`` ones, as ``mode`` says (see the module)."""

    expected: Sequence[str | tuple[str, Mapping[str, Any | Callable[[Any], bool]]]]
    mode: Mode = "strict"

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ValueError(f"mode must be one of {', '.join(_MODES)}; got {self.mode!r}")
        calls = expected_calls(self.expected)  # checks each item
        object.__setattr__(self, "expected", tuple(c.as_item() for c in calls))
        object.__setattr__(self, "_calls", calls)  # parsed once, not on every run scored

    @property
    def calls(self) -> tuple[ExpectedCall, ...]:
        """The expected calls, parsed."""
        calls: tuple[ExpectedCall, ...] = self.__dict__["_calls"]
        return calls

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run's tool calls match ``expected`` as ``mode`` says."""
        return match_calls(self.calls, ctx.tool_calls, self.mode)


@dataclass(frozen=True)
class MaxRounds(Evaluator):
    """The run made at most ``n`` model requests (the forced one included)."""

    n: int

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run made at most ``n`` model requests."""
        final = ctx.run.final
        rounds = (
            final.rounds
            if final is not None
            else sum(1 for e in ctx.events if e.type == "round_started" and not e.path)
        )
        verdict = "at most" if rounds <= self.n else "more than"
        return EvalResult(rounds <= self.n, f"{rounds} round(s): {verdict} {self.n}")


@dataclass(frozen=True)
class MaxToolCalls(Evaluator):
    """The run's agent made at most ``max_calls`` tool calls."""

    max_calls: int

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run made at most ``max_calls`` tool calls."""
        count = len(ctx.tool_calls)
        verdict = "at most" if count <= self.max_calls else "more than"
        return EvalResult(
            count <= self.max_calls, f"{count} tool call(s): {verdict} {self.max_calls}"
        )


@dataclass(frozen=True)
class NoErrors(Evaluator):
    """The run answered and none of its tool calls failed."""

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run answered and none of its tool calls failed."""
        if ctx.error is not None:
            return EvalResult(False, f"the run failed: {ctx.error}")
        failed = [e for e in ctx.events if e.type == "tool_result" and e.is_error]
        if failed:
            first = failed[0]
            return EvalResult(
                False,
                f"{len(failed)} tool call(s) failed; round {first.round}: "
                f"{first.name}: {first.content[:80]}",
            )
        return EvalResult(True, "no errors")


@dataclass(frozen=True)
class NotForced(Evaluator):
    """The answer was not forced by ``max_rounds`` (no forced final round)."""

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the answer was not forced by reaching ``max_rounds``."""
        final = ctx.run.final
        forced = (final is not None and final.forced) or any(
            e.type == "max_rounds_reached" and not e.path for e in ctx.events
        )
        if forced:
            return EvalResult(False, "max_rounds was reached: the answer was forced")
        return EvalResult(True, "answered within max_rounds")


@dataclass(frozen=True)
class MaxTokens(Evaluator):
    """The run's model requests used at most ``n`` tokens in all (``total_tokens``, or
    prompt + completion)."""

    n: int

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run's model requests used at most ``n`` tokens in all."""
        usage = ctx.usage
        if usage is None:
            return EvalResult(False, "the run's model reported no usage")
        total = usage.total_tokens
        if total is None:
            total = (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
        verdict = "at most" if total <= self.n else "more than"
        return EvalResult(total <= self.n, f"{total} tokens: {verdict} {self.n}")
