from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops

from rxreact._immediate import immediately, starting_with
from rxreact.approval import ApprovalDecision, Approvals
from rxreact.cancellation import CancellationToken
from rxreact.events import (
    ToolApprovalRequested,
    ToolExecutionStarted,
    ToolProgress,
    ToolResult,
)
from rxreact.messages import ToolCall
from rxreact.operators._timeout_with import timeout_with_
from rxreact.tool_results import (
    DEFAULT_MAX_RESULT_CHARS,
    ToolResultError,
    result_text,
    truncate_result,
)
from rxreact.tools import Tool, ToolArgumentsError, ToolInterruptedError
from rxreact.tracing import RunTracer


class _ToolTimeoutError(Exception):
    pass


def run_tools_(
    tools: Mapping[str, Tool[..., Any]],
    *,
    round_number: int,
    results: list[ToolResult | None],
    scheduler: abc.SchedulerBase,
    tools_scheduler: abc.SchedulerBase,
    default_timeout: float | None,
    trace: RunTracer | None = None,
    approvals: Approvals | None = None,
    approval_timeout: float | None = None,
) -> Callable[[Observable[ToolCall]], Observable[Any]]:
    def execute(call: ToolCall, position: int) -> Observable[Any]:
        def factory(_: abc.SchedulerBase) -> Observable[Any]:
            started_at = scheduler.now

            def result(content: str, is_error: bool) -> ToolResult:
                event = ToolResult(
                    round=round_number,
                    call_id=call.id,
                    name=call.name,
                    content=content,
                    is_error=is_error,
                    duration_s=(scheduler.now - started_at).total_seconds(),
                )
                results[position] = event
                return event

            def failed(message: str) -> Observable[Any]:
                return reactivex.defer(lambda _: immediately(result(message, True)))

            def run(tool: Tool[..., Any], arguments: dict[str, Any]) -> Observable[Any]:
                timeout = tool.timeout if tool.timeout is not None else default_timeout

                def invoke(
                    observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
                ) -> abc.DisposableBase:
                    def progress(value: Any) -> None:
                        observer.on_next(
                            ToolProgress(
                                round=round_number, call_id=call.id, name=call.name, value=value
                            )
                        )

                    body = tool.invoke(arguments, CancellationToken(), tools_scheduler, progress)
                    if timeout is not None:
                        # On the result alone (progress goes around it): a deadline for the
                        # whole call, which progress does not extend.
                        expired = reactivex.throw(_ToolTimeoutError(timeout))
                        body = body.pipe(timeout_with_(timeout, expired, scheduler))
                    return body.pipe(
                        ops.map(
                            lambda value: result(result_text(value, tool.max_result_chars), False)
                        )
                    ).subscribe(observer)

                return Observable(invoke).pipe(
                    ops.catch(lambda error, _: immediately(result(_describe(call, error), True))),
                )

            started = ToolExecutionStarted(round=round_number, call_id=call.id, name=call.name)

            def gated(
                tool: Tool[..., Any], arguments: dict[str, Any], gate: Approvals
            ) -> Observable[Any]:
                """Ask first; on approval start and run the tool, on denial answer for it."""
                request = ToolApprovalRequested(
                    round=round_number, call_id=call.id, name=call.name, arguments=arguments
                )
                decision = gate.decision(request)  # waiting from now: an early approve counts
                if approval_timeout is not None:
                    reason = f"no decision within {approval_timeout:g} s"
                    late = immediately(ApprovalDecision(approved=False, reason=reason))
                    decision = decision.pipe(timeout_with_(approval_timeout, late, scheduler))

                def decided(answer: ApprovalDecision) -> Observable[Any]:
                    if answer.approved:
                        return starting_with(run(tool, arguments), started)
                    because = f" Reason: {answer.reason}" if answer.reason else ""
                    text = f"The call of tool {call.name!r} was denied; it did not run.{because}"
                    return immediately(result(text, False))

                return starting_with(decision.pipe(ops.take(1), ops.flat_map(decided)), request)

            tool = tools.get(call.name)
            if tool is None:
                known = ", ".join(sorted(tools)) or "(none)"
                outcome = failed(
                    f"Error: there is no tool named {call.name!r}. Valid tools: {known}."
                )
            else:
                try:
                    arguments = tool.parse_arguments(call.arguments)
                except ToolArgumentsError as error:
                    outcome = failed(f"Error calling tool {call.name!r}: {error}")
                else:
                    if approvals is not None and _needs_approval(tool, arguments):
                        whole = gated(tool, arguments, approvals)
                        return whole if trace is None else trace.tool(call, whole)
                    outcome = run(tool, arguments)
            if trace is not None:
                outcome = trace.tool(call, outcome)
            # Not ``reactivex.concat``: it schedules its second source and could lose it to the
            # preemption race of ``concat_with_iterable`` (see ``concat_steps``).
            return starting_with(outcome, started)

        return reactivex.defer(factory)

    def run_tools(source: Observable[ToolCall]) -> Observable[Any]:
        # flat_map merges the calls' observables: all run at once, events arrive in completion
        # order, and the merged stream completes only when every call has completed. That
        # completion is the round's completion counter.
        return source.pipe(ops.flat_map_indexed(execute))

    return run_tools


def _needs_approval(tool: Tool[..., Any], arguments: dict[str, Any]) -> bool:
    try:
        return tool.needs_approval(arguments)
    except Exception:
        return True  # a predicate that fails cannot vouch for the call: ask


def _describe(call: ToolCall, error: Exception) -> str:
    if isinstance(error, _ToolTimeoutError):
        return f"Error: tool {call.name!r} timed out after {error.args[0]:g} s."
    if isinstance(error, ToolResultError):
        return f"Error: tool {call.name!r} {error}."
    if isinstance(error, ToolInterruptedError):
        return f"Error: tool {call.name!r} raised {error}."
    # An exception's text can be as long as a result: bounded the same way.
    text = f"Error: tool {call.name!r} raised {type(error).__name__}: {error}"
    return truncate_result(text, DEFAULT_MAX_RESULT_CHARS)
