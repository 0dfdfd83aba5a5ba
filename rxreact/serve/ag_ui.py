"""Agent events as AG-UI events: the AG-UI 1.0 protocol's HTTP+SSE stream (CopilotKit and the
frameworks that speak it), encoded with the official ``ag-ui-protocol`` models.

One rxreact run can span several AG-UI runs: a run that waits for the client (a tool call
that needs approval, or a call of a tool the front end declared) ends its AG-UI run there,
and the next request continues the same rxreact run. Each AG-UI run is a *segment* of the
event sequence::

    (segment start)             RUN_STARTED, then what was open at the start reopened (the
                                round's step, a text or reasoning message, tool calls)
    round_started(n)            [STEP_FINISHED "round n-1"], STEP_STARTED "round n"
    reasoning_delta             REASONING_START + REASONING_MESSAGE_START (first),
                                REASONING_MESSAGE_CONTENT
    text_delta                  [reasoning closed], TEXT_MESSAGE_START (first),
                                TEXT_MESSAGE_CONTENT
    tool_call_started           [text closed], TOOL_CALL_START (parentMessageId: the round's
                                assistant message)
    tool_call_args_delta        TOOL_CALL_ARGS
    round_finished              [text closed], TOOL_CALL_END per call
    tool_result                 TOOL_CALL_RESULT (not for a client-side tool: the client sent it)
    tool_approval_requested     an interrupt {id: call id, reason: "tool_approval"}, or for a
                                client-side tool a pending tool call, once every call of the
                                round has begun: STEP_FINISHED, RUN_FINISHED with outcome
                                "interrupt" (or "success" with pendingToolCallIds); the
                                segment ends, the run waits
    final_answer                STEP_FINISHED, RUN_FINISHED "success" (result: the
                                output_type value, usage)
    on_error                    [everything open closed], RUN_ERROR; RUN_FINISHED "cancelled"
                                for a cancelled run

Every event of one agent event is sent with that event's ``seq`` as its SSE ``id``; the
events a segment makes up (its RUN_STARTED, reopenings, the closing of a failed run) have
none. The mapping is a function of the whole event sequence from ``seq`` 1, so a segment
that starts later (a resumed stream, the continuation after a pause) replays the run through
it and sends only what comes after its start: the message and tool call ids the client
holds stay valid.

No Starlette here: :func:`to_ag_ui_events` is an Rx operator usable on any run's events; the
endpoint is :mod:`rxreact.serve._ag_ui_routes`. Needs the ``ag-ui`` extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    Interrupt,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from reactivex import Observable, abc

from rxreact.errors import RunCancelledError
from rxreact.events import (
    FinalAnswer,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolResult,
)
from rxreact.serve.ui_stream import error_text

__all__ = ["APPROVAL_REASON", "AGUIChunk", "to_ag_ui_events"]

APPROVAL_REASON = "tool_approval"
"""The ``reason`` of the interrupt a tool call waiting for approval raises."""

_APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
}


@dataclass(frozen=True, slots=True)
class AGUIChunk:
    """One AG-UI event and the ``seq`` of the agent event it came from."""

    seq: int | None
    """The agent event's ``seq`` (the SSE ``id``); ``None`` for the events a segment makes up."""
    event: BaseEvent
    """The event, an ``ag_ui.core`` model."""

    def to_json(self) -> dict[str, Any]:
        """The event as the protocol's JSON object (camelCase, unset fields left out)."""
        data: dict[str, Any] = self.event.model_dump(mode="json", by_alias=True)
        return data

    def to_sse(self) -> str:
        """The event as one SSE event."""
        data = self.event.model_dump_json(by_alias=True)
        return f"data: {data}\n\n" if self.seq is None else f"id: {self.seq}\ndata: {data}\n\n"


@dataclass
class _Mapper:
    """The per-subscription state: the open round, messages and calls, and the pauses."""

    thread_id: str
    run_id: str
    prefix: str
    client_tools: frozenset[str]
    interrupts: bool
    start: int | None  # events after this seq are sent; None: after the pause of `resume`
    resume: frozenset[str]
    round: int = 0
    step_open: bool = False
    text_id: str | None = None
    reasoning_id: str | None = None
    texts: int = 0  # text messages of the round so far
    thoughts: int = 0  # reasoning messages of the round so far
    calls: dict[int, tuple[str, str]] = field(default_factory=dict)  # open: index -> (id, name)
    awaited: set[str] = field(default_factory=set)  # the round's calls not yet begun
    waiting: list[str] = field(default_factory=list)  # client-side calls waiting
    asked: list[Interrupt] = field(default_factory=list)  # approvals waiting
    paused: bool = False  # this round paused already
    began: bool = False
    ended: bool = False

    # -- events -------------------------------------------------------------------------------

    def feed(self, event: Any) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if isinstance(event, TextDelta):
            self._close_reasoning(out)
            if self.text_id is None:
                self.text_id = self._message_id()
                out.append(TextMessageStartEvent(message_id=self.text_id, role="assistant"))
            if event.delta:
                out.append(TextMessageContentEvent(message_id=self.text_id, delta=event.delta))
        elif isinstance(event, ReasoningDelta):
            if self.reasoning_id is None:
                self.thoughts += 1
                self.reasoning_id = f"{self.prefix}-{self.round}-reasoning-{self.thoughts}"
                out += self._open_reasoning(self.reasoning_id)
            if event.delta:
                out.append(
                    ReasoningMessageContentEvent(message_id=self.reasoning_id, delta=event.delta)
                )
        elif isinstance(event, ToolCallArgsDelta):
            call_id, _ = self.calls[event.index]
            if event.delta:
                out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=event.delta))
        elif isinstance(event, RoundStarted):
            self._finish_step(out)
            self.round, self.texts, self.thoughts = event.round, 0, 0
            self.step_open, self.paused, self.waiting, self.asked = True, False, [], []
            out.append(StepStartedEvent(step_name=self._step()))
        elif isinstance(event, ToolCallStarted):
            self._close_messages(out)
            self.calls[event.index] = (event.call_id, event.name)
            out.append(self._call_start(event.call_id, event.name))
        elif isinstance(event, RoundFinished):
            self._close_messages(out)
            for call_id, _ in self.calls.values():
                out.append(ToolCallEndEvent(tool_call_id=call_id))
            self.awaited = {call_id for call_id, _ in self.calls.values()}
            self.waiting, self.asked = [], []
            self.calls = {}
        elif isinstance(event, ToolApprovalRequested):
            self.awaited.discard(event.call_id)
            if event.name in self.client_tools:
                self.waiting.append(event.call_id)
            elif self.interrupts:
                self.asked.append(_interrupt(event))
        elif isinstance(event, ToolExecutionStarted):
            self.awaited.discard(event.call_id)
        elif isinstance(event, ToolResult):
            self.awaited.discard(event.call_id)
            if event.name not in self.client_tools:
                out.append(
                    ToolCallResultEvent(
                        message_id=f"{event.call_id}-result",
                        tool_call_id=event.call_id,
                        content=event.content,
                        role="tool",
                    )
                )
        elif isinstance(event, FinalAnswer):
            self._finish_step(out)
            usage = _usage(event)
            out.append(
                RunFinishedEvent(
                    thread_id=self.thread_id,
                    run_id=self.run_id,
                    result=event.output,
                    outcome=RunFinishedSuccessOutcome(),
                    usage=[usage] if usage is not None else None,
                )
            )
        # round_mode_decided, tool_progress, validation and the other kinds carry nothing the
        # protocol has an event for.
        return out

    def pause(self, seq: int) -> list[BaseEvent] | None:
        """The end of the segment when the round now waits for the client, else ``None``.

        A round waits once every call of it has begun (each one either started or asked to
        wait), so one pause carries all of the round's waiting calls.
        """
        if self.paused or self.awaited or not (self.waiting or self.asked):
            return None
        self.paused = True
        waits = set(self.waiting) | {i.id for i in self.asked}
        if self.start is None:
            if waits & self.resume:  # the pause this segment continues from
                self.start = seq
            return None
        if seq <= self.start:
            return None
        out: list[BaseEvent] = []
        if self.step_open:  # the round goes on in the next segment, which reopens its step
            out.append(StepFinishedEvent(step_name=self._step()))
        outcome = (
            RunFinishedInterruptOutcome(interrupts=list(self.asked))
            if self.asked
            else RunFinishedSuccessOutcome(pending_tool_call_ids=list(self.waiting))
        )
        out.append(RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome))
        return out

    def fail(self, error: Exception) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        for call_id, _ in self.calls.values():
            out.append(ToolCallEndEvent(tool_call_id=call_id))
        self.calls = {}
        self._finish_step(out)
        if isinstance(error, RunCancelledError):
            cancelled = RunFinishedCancelledOutcome()
            out.append(
                RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=cancelled)
            )
        else:
            out.append(RunErrorEvent(message=error_text(error), code=type(error).__name__))
        return out

    def opening(self) -> list[BaseEvent]:
        """RUN_STARTED and, for a segment that starts mid-run, what is open at its start."""
        out: list[BaseEvent] = [
            RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
            )
        ]
        if self.step_open:
            out.append(StepStartedEvent(step_name=self._step()))
        if self.reasoning_id is not None:
            out += self._open_reasoning(self.reasoning_id)
        if self.text_id is not None:
            out.append(TextMessageStartEvent(message_id=self.text_id, role="assistant"))
        out += [self._call_start(call_id, name) for call_id, name in self.calls.values()]
        return out

    # -- helpers ------------------------------------------------------------------------------

    def _step(self) -> str:
        return f"round {self.round}"

    def _message_id(self) -> str:
        # The round's first message has the id its tool calls name as their parent.
        self.texts += 1
        base = f"{self.prefix}-{self.round}"
        return base if self.texts == 1 else f"{base}-{self.texts}"

    def _call_start(self, call_id: str, name: str) -> ToolCallStartEvent:
        parent = f"{self.prefix}-{self.round}"
        return ToolCallStartEvent(
            tool_call_id=call_id, tool_call_name=name, parent_message_id=parent
        )

    @staticmethod
    def _open_reasoning(message_id: str) -> list[BaseEvent]:
        return [
            ReasoningStartEvent(message_id=message_id),
            ReasoningMessageStartEvent(message_id=message_id, role="reasoning"),
        ]

    def _close_reasoning(self, out: list[BaseEvent]) -> None:
        if self.reasoning_id is not None:
            out.append(ReasoningMessageEndEvent(message_id=self.reasoning_id))
            out.append(ReasoningEndEvent(message_id=self.reasoning_id))
            self.reasoning_id = None

    def _close_messages(self, out: list[BaseEvent]) -> None:
        self._close_reasoning(out)
        if self.text_id is not None:
            out.append(TextMessageEndEvent(message_id=self.text_id))
            self.text_id = None

    def _finish_step(self, out: list[BaseEvent]) -> None:
        self._close_messages(out)
        if self.step_open:
            out.append(StepFinishedEvent(step_name=self._step()))
            self.step_open = False


def _interrupt(event: ToolApprovalRequested) -> Interrupt:
    arguments = json.dumps(event.arguments, ensure_ascii=False, default=str)
    return Interrupt(
        id=event.call_id,
        reason=APPROVAL_REASON,
        message=f"{event.name}({arguments}) waits for approval",
        tool_call_id=event.call_id,
        response_schema=_APPROVAL_SCHEMA,
        metadata={"toolName": event.name, "arguments": event.arguments},
    )


def _usage(final: FinalAnswer) -> TokenUsage | None:
    usage = final.usage
    if usage is None:
        return None
    return TokenUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )


def to_ag_ui_events(
    thread_id: str,
    run_id: str,
    *,
    after: int = 0,
    resume: Collection[str] = (),
    client_tools: Collection[str] = (),
    interrupts: bool = True,
    id_prefix: str | None = None,
) -> Callable[[Observable[Any]], Observable[AGUIChunk]]:
    """Map a run's events (from its first, ``seq`` 1) to one AG-UI segment.

    ::

        events:  -R1--T--T--F|          R: round_started, T: text_delta, F: final_answer
        result:  -(rs,ss)--(ts,tc)--tc--(te,sf,rf)|
                                        rs: RUN_STARTED, ss: STEP_STARTED, ts/tc/te:
                                        TEXT_MESSAGE_START/CONTENT/END, sf: STEP_FINISHED,
                                        rf: RUN_FINISHED

        events:  -R1--C--A--RF--Q--...  C: tool_call_started, A: args, RF: round_finished,
                                        Q: tool_approval_requested (the run waits)
        result:  -(rs,ss)--cs--ca--ce--(sf,rf)|   rf: RUN_FINISHED outcome "interrupt"

        events:  -R1--T--#              the run failed
        result:  -(rs,ss)--(ts,tc)--(te,sf,re)|   re: RUN_ERROR; no error out

    Args:
        thread_id: ``threadId`` of RUN_STARTED / RUN_FINISHED (the conversation).
        run_id: ``runId`` of RUN_STARTED / RUN_FINISHED (the client's run of this segment).
        after: events with ``seq <= after`` update the state but are not sent: the
            ``Last-Event-ID`` of a resumed stream.
        resume: tool call ids the client answers now (results of client-side tools,
            decided interrupts): the segment starts after the pause that waited for them.
        client_tools: the names of the tools the front end runs (their calls wait for it).
        interrupts: a ``tool_approval_requested`` is an interrupt for the client to answer
            (``False``: an approver on the server decides, the client is not asked).
        id_prefix: what message ids start with (default ``run_id``); the same for every
            segment of one rxreact run (the server uses the run's id).

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[AGUIChunk]``. It completes at the
        end of the segment: the run's end, or a pause (the run goes on without it).
    """
    clients = frozenset(client_tools)
    answered = frozenset(resume)

    def operator(source: Observable[Any]) -> Observable[AGUIChunk]:
        def subscribe(
            observer: abc.ObserverBase[AGUIChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            mapper = _Mapper(
                thread_id,
                run_id,
                id_prefix or run_id,
                clients,
                interrupts,
                None if answered else after,
                answered,
            )
            count = 0

            def send(seq: int | None, events: list[BaseEvent]) -> None:
                if not mapper.began:
                    mapper.began = True
                    for opening in mapper.opening():
                        observer.on_next(AGUIChunk(None, opening))
                for event in events:
                    observer.on_next(AGUIChunk(seq, event))

            def on_next(event: Any) -> None:
                nonlocal count
                if mapper.ended:
                    return
                count += 1
                seq = getattr(event, "seq", None) or count
                try:
                    # The opening describes the state before this event.
                    sending = mapper.start is not None and seq > mapper.start
                    if sending and not mapper.began:
                        send(seq, [])
                    events = mapper.feed(event)
                    ending = mapper.pause(seq)
                except Exception as error:  # a bug in the mapping, not the run's error
                    mapper.ended = True
                    observer.on_error(error)
                    return
                if sending:
                    send(seq, events + (ending or []))
                if (sending and ending) or isinstance(event, FinalAnswer):
                    if not mapper.began:  # everything was before the start: an empty segment
                        send(None, [RunFinishedEvent(thread_id=thread_id, run_id=run_id)])
                    mapper.ended = True
                    observer.on_completed()

            def on_error(error: Exception) -> None:
                if mapper.ended:
                    return
                mapper.ended = True
                send(None, mapper.fail(error))
                observer.on_completed()

            def on_completed() -> None:
                if mapper.ended:
                    return
                mapper.ended = True
                if not mapper.began:
                    send(None, [RunFinishedEvent(thread_id=thread_id, run_id=run_id)])
                observer.on_completed()

            return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
