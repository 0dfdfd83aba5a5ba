"""``run_tools``: one round's tool calls, run at once, merged with a completion counter.

Plain calls need no Observable of their own (``_tool_call``); calls that wait for approval
or run inside a tracer's span keep an Observable per call, since a person or a span wraps them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops

from rxreact.cancellation import CancellationToken
from rxreact.events import ToolApprovalRequested, ToolExecutionStarted, ToolResult
from rxreact.messages import ContentPart, ToolCall
from rxreact.messages._labels import content_label
from rxreact.operators._timeout_with import timeout_with_
from rxreact.operators._tool_call import Call, Inner, Round
from rxreact.rx._fused import Fused, Keeper, subscribe_observer
from rxreact.rx._immediate import immediately, starting_with
from rxreact.tools.approval import ApprovalDecision, Approvals
from rxreact.tools.nesting import CallingRun
from rxreact.tools.tool import Tool, ToolArgumentsError
from rxreact.tracing import RunTracer


@dataclass(frozen=True, slots=True)
class _Tools:
    """What a round's calls need: the tools, where they run, the round's clock and slots."""

    tools: Mapping[str, Tool[..., Any]]
    round_number: int
    results: list[ToolResult | None]
    scheduler: abc.SchedulerBase
    tools_scheduler: abc.SchedulerBase
    default_timeout: float | None
    trace: RunTracer | None
    approvals: Approvals | None
    approval_timeout: float | None
    caller: CallingRun | None

    def start(self, round_: Round, call: ToolCall, position: int) -> None:
        """Start one call: its events go into ``round_``, its result into ``results``."""
        round_.begin()
        scheduler, results, number = self.scheduler, self.results, self.round_number
        started_at = scheduler.now

        def make(content: str | tuple[ContentPart, ...], is_error: bool) -> ToolResult:
            event = ToolResult(
                round=number,
                call_id=call.id,
                name=call.name,
                content=content_label(content),
                parts=() if isinstance(content, str) else content,
                is_error=is_error,
                duration_s=(scheduler.now - started_at).total_seconds(),
            )
            results[position] = event
            return event

        inner = Inner(round_)
        started = ToolExecutionStarted(round=number, call_id=call.id, name=call.name)
        prepared = self._prepare(call)
        if isinstance(prepared, str):  # no such tool, or arguments it cannot take
            round_.emit(started)
            if self.trace is None:
                inner.on_next(make(prepared, True))
                inner.on_completed()
            else:
                failed = _answer(make, prepared, is_error=True)
                round_.disposables.add(self.trace.tool(call, failed).subscribe(inner))
            return
        tool, arguments = prepared
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        lock, tools_scheduler, caller = round_.lock, self.tools_scheduler, self.caller
        nested = tool._nested if caller is not None else None

        def launch(sink: abc.ObserverBase[Any]) -> Call:
            """Run the tool now, its events into ``sink`` (cancelled with the round)."""
            running = Call(call, number, sink, lock, make, tool.max_result_chars)
            round_.disposables.add(running)

            def body() -> Observable[Any]:
                if nested is not None and caller is not None:  # an agent: its run, in ours
                    return nested(arguments, call.id, caller, running.forward)
                token = CancellationToken()
                context = (
                    caller.run_context(number, token)
                    if caller is not None and tool._context_parameter is not None
                    else None
                )
                return tool.invoke(arguments, token, tools_scheduler, running.progress, context)

            running.start(body, timeout, scheduler)
            return running

        gate = self.approvals
        if gate is not None and _needs_approval(tool, arguments):
            events = self._gated(call, arguments, started, make, gate, launch)
        else:
            round_.emit(started)
            if self.trace is None:  # the common case: no Observable per call at all
                launch(inner)
                return
            events = _events(launch)
        if self.trace is not None:
            events = self.trace.tool(call, events)
        round_.disposables.add(events.subscribe(inner))

    def _prepare(self, call: ToolCall) -> tuple[Tool[..., Any], dict[str, Any]] | str:
        """The call's tool and parsed arguments, or the error text the model reads instead."""
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "(none)"
            return f"Error: there is no tool named {call.name!r}. Valid tools: {known}."
        try:
            return tool, tool.parse_arguments(call.arguments)
        except ToolArgumentsError as error:
            return f"Error calling tool {call.name!r}: {error}"

    def _gated(
        self,
        call: ToolCall,
        arguments: dict[str, Any],
        started: ToolExecutionStarted,
        make: Callable[[str, bool], ToolResult],
        gate: Approvals,
        launch: Callable[[abc.ObserverBase[Any]], Call],
    ) -> Observable[Any]:
        """Ask first; on approval start and run the tool, on denial answer for it."""
        number = self.round_number
        request = ToolApprovalRequested(
            round=number, call_id=call.id, name=call.name, arguments=arguments
        )
        decision = gate.decision(request)  # waiting from now: an early approve counts
        if self.approval_timeout is not None:
            reason = f"no decision within {self.approval_timeout:g} s"
            late = immediately(ApprovalDecision(approved=False, reason=reason))
            decision = decision.pipe(timeout_with_(self.approval_timeout, late, self.scheduler))

        def decided(answer: ApprovalDecision) -> Observable[Any]:
            if answer.approved:
                return starting_with(_events(launch), started)
            because = f" Reason: {answer.reason}" if answer.reason else ""
            text = f"The call of tool {call.name!r} was denied; it did not run.{because}"
            return _answer(make, text, is_error=False)

        settled = decision.pipe(ops.take(1), ops.flat_map(decided))
        # A call asked by the run's earlier owner (a taken-over run) is not announced again.
        return settled if gate.asked(call.id) else starting_with(settled, request)


def _answer(
    make: Callable[[str, bool], ToolResult], text: str, *, is_error: bool
) -> Observable[Any]:
    """A call answered without running its tool: its result, made when subscribed."""
    return reactivex.defer(lambda _: immediately(make(text, is_error)))


def _events(launch: Callable[[abc.ObserverBase[Any]], Call]) -> Observable[Any]:
    """A call as an Observable of its events (for a tracer's span, or after approval)."""

    def subscribe(
        observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return launch(observer)

    return Observable(subscribe)


class _Calls(Keeper, abc.ObserverBase[ToolCall]):
    """The round's source of calls: each one started as it comes, numbered by position.
    Subscribed as it is (a :class:`~rxreact.rx._fused.Keeper`: one end, counted once)."""

    __slots__ = ("_ended", "_position", "_round", "_tools")

    def __init__(self, round_: Round, tools: _Tools) -> None:
        self._round = round_
        self._tools = tools
        self._position = 0
        self._ended = False

    def ended(self) -> bool:
        return self._ended

    def on_next(self, value: ToolCall) -> None:
        position, self._position = self._position, self._position + 1
        self._tools.start(self._round, value, position)

    def on_error(self, error: Exception) -> None:
        if not self._ended:
            self._ended = True
            self._round.fail(error)

    def on_completed(self) -> None:
        if not self._ended:
            self._ended = True
            self._round.end()


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
    caller: CallingRun | None = None,
) -> Callable[[Observable[ToolCall]], Observable[Any]]:
    setup = _Tools(
        tools,
        round_number,
        results,
        scheduler,
        tools_scheduler,
        default_timeout,
        trace,
        approvals,
        approval_timeout,
        caller,
    )

    def run_tools(source: Observable[ToolCall]) -> Observable[Any]:
        # Fused: the round keeps the contract (events under its lock, one end), so the agent
        # subscribes to it without RxPY's wrapper (some fifteen calls and three RLocks).
        return Fused(_RunTools(source, setup).subscribe)

    return run_tools


class _RunTools:
    """``run_tools``' subscribe function: the source and the setup in slots, not a closure's
    cells (alive as long as the run holds the Observable, for every collection to walk)."""

    __slots__ = ("setup", "source")

    def __init__(self, source: Observable[ToolCall], setup: _Tools) -> None:
        self.source = source
        self.setup = setup

    def subscribe(
        self, observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        round_ = Round(observer)
        round_.disposables.add(subscribe_observer(self.source, _Calls(round_, self.setup)))
        return round_


def _needs_approval(tool: Tool[..., Any], arguments: dict[str, Any]) -> bool:
    try:
        return tool.needs_approval(arguments)
    except Exception:
        return True  # a predicate that fails cannot vouch for the call: ask
