"""One guardrail check of a run: :func:`check_guardrail`.

The guardrail is called the way a tool is (:func:`~rxreact.rx._call_once.call_once`: sync on
the tools scheduler, ``async def`` on rxreact's I/O loop, or the Observable it returns), in an
``execute_guardrail`` span when the run is traced; its answer becomes one verdict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import abc

from rxreact.cancellation import CancellationToken
from rxreact.checks.guardrails import GuardrailResult, guardrail_name
from rxreact.rx._call_once import call_once
from rxreact.tracing import RunTracer

__all__ = ["check_guardrail"]


def check_guardrail(
    guardrail: Any,
    args: tuple[Any, ...],
    kind: str,
    scheduler: abc.SchedulerBase,
    trace: RunTracer | None,
    verdict: Callable[[str | None], None],
) -> abc.DisposableBase:
    """Call ``guardrail(*args)``; then ``verdict(None)`` if it passed, else ``verdict(reason)``
    (a result that is not a :class:`GuardrailResult`, or a failure, is a trip too).

    ::

        guardrail:   ---r|            r: GuardrailResult(tripped=False)
        verdict:     ----(None)       at the completion, after the span ended
        guardrail:   ---#             a failure
        verdict:     ---("it failed (ValueError: ...)")

    Args:
        guardrail: the guardrail function.
        args: its arguments: ``(question, history)`` for an input one, ``(text,)`` for output.
        kind: ``"input"`` or ``"output"``, for the span.
        scheduler: where a sync guardrail runs.
        trace: the run's tracer, or ``None``.
        verdict: told once, unless the returned subscription is disposed first.

    Returns:
        The check's subscription: disposing it stops the check.
    """
    answer: list[Any] = []

    def on_completed() -> None:
        # Acted on at completion, not on the value: a span around the check ends first.
        result = answer[0] if answer else None
        if not isinstance(result, GuardrailResult):
            verdict(f"it returned {type(result).__name__}, not a GuardrailResult")
        elif result.tripped:
            verdict(result.reason)
        else:
            verdict(None)

    def on_error(error: Exception) -> None:
        verdict(f"it failed ({type(error).__name__}: {error})")

    check = call_once(guardrail, args, {}, CancellationToken(), scheduler)
    if trace is not None:
        check = trace.guardrail(guardrail_name(guardrail), kind, check)
    return check.subscribe(answer.append, on_error, on_completed)
