"""One run's use of a :class:`~rxreact.ContextBudget`: fit each request before it is sent, get
or reuse the summary when the strategy asks for one, learn from the reported prompt tokens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex import operators as ops

from rxreact.cancellation import CancellationToken
from rxreact.context.budget import ContextBudget, FittedContext
from rxreact.events import ContextTrimmed
from rxreact.messages import ChatRequest, Message, ToolSpec, Usage
from rxreact.model.base import ChatModel
from rxreact.model.chunks import ModelResponse
from rxreact.rx._call_once import call_once
from rxreact.rx._immediate import immediately

__all__ = ["RequestFitter"]


class RequestFitter:
    """Fits the requests of one run.

    Args:
        budget: the agent's budget.
        model: writes the summaries (non-streamed: ``model.complete`` on ``scheduler``).
        scheduler: where the blocking summary request runs (the agent's tools scheduler).
        key: the conversation (summaries and calibration are kept per conversation).
        count_usage: receives each summary request's usage.
    """

    def __init__(
        self,
        budget: ContextBudget,
        model: ChatModel,
        scheduler: abc.SchedulerBase,
        key: str,
        count_usage: Callable[[Usage | None], None],
    ) -> None:
        self.budget = budget
        self.model = model
        self.scheduler = scheduler
        self.key = key
        self.count_usage = count_usage
        self.fitted: FittedContext | None = None

    def prepare(
        self,
        head: Sequence[Message],
        earlier: Sequence[Message],
        turn: Sequence[Message],
        tools: Sequence[ToolSpec],
    ) -> Observable[Any]:
        """Fit the next request; a step that completes at once, or after the summary request.

        ::

            prepare():  |                        nothing to summarize, or a stored summary
            prepare():  ------------|            the summary request (on the tools scheduler)

        A summary request that fails leaves the dropped messages out without a summary: the
        run goes on trimmed rather than fail for want of a summary.
        """
        budget = self.budget
        fitted = self.fitted = budget.fit(head, earlier, turn, tools, self.key)
        if not fitted.summarize:
            return immediately()
        dropped, at = fitted.summarize, len(head)
        stored = budget.stored_summary(self.key, dropped)
        if stored is not None:
            fitted.messages.insert(at, budget.summary_message(stored))
            return immediately()

        def summarized(response: ModelResponse) -> None:
            self.count_usage(response.usage)
            text = budget.store_summary(self.key, dropped, response.content or "")
            fitted.messages.insert(at, budget.summary_message(text))

        request = budget.summary_request(self.key, dropped)
        return call_once(
            self.model.complete, (request,), {}, CancellationToken(), self.scheduler
        ).pipe(
            ops.do_action(on_next=summarized),
            ops.ignore_elements(),
            ops.catch(lambda _error, _source: immediately()),
        )

    def messages(self) -> list[Message]:
        """The fitted request's messages (after :meth:`prepare` completed)."""
        assert self.fitted is not None
        return self.fitted.messages

    def trimmed(self, round_number: int) -> tuple[ContextTrimmed, ...]:
        """The ``context_trimmed`` event of the fitted request, if anything was left out."""
        fitted = self.fitted
        if fitted is None or not (fitted.dropped or fitted.cut):
            return ()
        return (
            ContextTrimmed(
                round=round_number,
                dropped_messages=fitted.dropped,
                estimated_tokens=fitted.estimated_tokens,
            ),
        )

    def calibrate(self, request: ChatRequest, usage: Usage | None) -> None:
        """Learn the counter's ratio from what the provider reported for ``request``."""
        if usage is not None:
            self.budget.calibrate(self.key, request, usage.prompt_tokens)
