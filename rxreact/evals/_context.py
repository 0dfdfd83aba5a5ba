""":class:`EvalContext`: what an evaluator is given about one run of one case."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from rxreact.events import AgentEvent
from rxreact.messages import Usage
from rxreact.result import AgentResult

if TYPE_CHECKING:
    from rxreact.evals._case import Case
    from rxreact.evals._run import RecordedRun, ToolCallMade
    from rxreact.marbles import Recording

__all__ = ["EvalContext"]


class EvalContext:
    """One run of one case, as evaluators see it (the same live and when re-scored).

    Attributes:
        case: the :class:`~rxreact.evals.Case`.
        run: the :class:`~rxreact.evals.RecordedRun` (events, times, how it ended).
        events: the run's typed events, in ``seq`` order.
        times: each event's time in seconds since the run started, on the run's clock.
        result: the :class:`~rxreact.AgentResult` (``None`` when the run failed).
        output: the typed answer with ``output_type``, else the answer's text (``None`` when
            the run failed).
        duration: seconds from the start to the end of the run, on its clock.
        first_token: seconds to the first text delta of the answer (``None``: none came).
        usage: what the agent's model requests used.
        error: why the run failed, ``None`` when it answered.
    """

    __slots__ = ("__dict__", "case", "run")

    def __init__(self, case: Case, run: RecordedRun) -> None:
        self.case: Case = case
        self.run: RecordedRun = run

    def __repr__(self) -> str:
        return f"EvalContext(case={self.case.name!r}, run={self.run!r})"

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        return self.run.events

    @property
    def times(self) -> tuple[float, ...]:
        return self.run.times

    @property
    def result(self) -> AgentResult | None:
        return self.run.result

    @property
    def expected(self) -> Any:
        """The case's expected answer or output."""
        return self.case.expected

    @property
    def question(self) -> Any:
        """The case's question."""
        return self.case.question

    @property
    def answer(self) -> str | None:
        """The answer's text (``None`` when the run failed)."""
        return self.run.answer

    @cached_property
    def output(self) -> Any:
        final = self.run.final
        if final is None:
            return None
        return final.output if final.output is not None else final.text

    @property
    def duration(self) -> float | None:
        return self.run.duration

    @property
    def first_token(self) -> float | None:
        return self.run.first_token

    @property
    def usage(self) -> Usage | None:
        return self.run.usage

    @property
    def error(self) -> str | None:
        return self.run.error

    @property
    def tool_calls(self) -> tuple[ToolCallMade, ...]:
        """The root agent's tool calls, in order, with their parsed arguments."""
        return self.run.tool_calls

    @cached_property
    def recording(self) -> Recording:
        """The run as a marble :class:`~rxreact.marbles.Recording` (for drawing it)."""
        from rxreact.evals._replay import recording_of

        return recording_of(self.run)
