"""The state machine of :func:`rxreact.serve.ag_ui.to_ag_ui_events`: what is open (the round's
step, a text or reasoning message, tool calls), what the round waits for, where the segment
starts; one per subscription. A call waiting for approval becomes an interrupt as
:mod:`rxreact.serve.ag_ui._interrupts` builds it."""

from __future__ import annotations

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

from rxreact.errors import RunCancelledError
from rxreact.events import (
    FinalAnswer,
    OutputPartial,
    OutputReset,
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
from rxreact.serve._client_errors import error_text
from rxreact.serve.ag_ui._interrupts import APPROVAL_REASON, interrupt
from rxreact.serve.ag_ui._output_state import OutputState

__all__ = ["APPROVAL_REASON", "Mapper"]


@dataclass
class Mapper:
    """The per-subscription state: the open round, messages and calls, and the pauses."""

    thread_id: str
    run_id: str
    prefix: str
    client_tools: frozenset[str]
    interrupts: bool
    start: int | None  # events after this seq are sent; None: after the pause of `resume`
    resume: frozenset[str]
    still: frozenset[str]  # calls of that pause that still wait after this request's answers
    round: int = 0
    steps: int = 0  # root rounds so far, for message ids unique in the run whatever `round` is
    step_open: bool = False
    text_id: str | None = None
    reasoning_id: str | None = None
    texts: int = 0  # text messages of the round so far
    thoughts: int = 0  # reasoning messages of the round so far
    calls: dict[int, tuple[str, str]] = field(default_factory=dict)  # open: index -> (id, name)
    awaited: set[str] = field(default_factory=set)  # the round's calls not yet begun
    waiting: list[str] = field(default_factory=list)  # client-side calls waiting
    asked: list[Interrupt] = field(default_factory=list)  # approvals waiting
    reported: set[str] = field(default_factory=set)  # waiting calls a pause named already
    began: bool = False
    ended: bool = False
    output: OutputState = field(default_factory=OutputState)  # the typed answer as state

    # -- events -------------------------------------------------------------------------------

    def feed(self, event: Any) -> list[BaseEvent]:
        out: list[BaseEvent] = []
        if getattr(event, "path", ()):
            self._nested(event)  # a run of an agent tool: only what it waits for shows
            return out
        if isinstance(event, OutputPartial | OutputReset | FinalAnswer):
            out += self.output.feed(event)
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
                self.reasoning_id = f"{self.prefix}-{self.steps}-reasoning-{self.thoughts}"
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
            self.steps += 1
            self.step_open, self.waiting, self.asked, self.reported = True, [], [], set()
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
                self.asked.append(interrupt(event))
        elif isinstance(event, ToolExecutionStarted):
            self._began(event.call_id)
        elif isinstance(event, ToolResult):
            self._began(event.call_id)
            if event.name not in self.client_tools:
                out.append(
                    ToolCallResultEvent(
                        message_id=f"{self.prefix}-result-{event.call_id}",
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
        wait), so one pause carries all of the round's waiting calls. The continuation of a
        pause whose answers left some of its calls waiting ends at once, naming those.
        """
        waits = set(self.waiting) | {i.id for i in self.asked}
        if self.awaited or not waits - self.reported:
            return None
        self.reported |= waits
        if self.start is None:
            if not waits & self.resume:
                return None
            self.start = seq  # the pause this segment continues from
            self.waiting = [c for c in self.waiting if c in self.still]
            self.asked = [i for i in self.asked if i.id in self.still]
            if not (self.waiting or self.asked):
                return None
        elif seq <= self.start:
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

    def _nested(self, event: Any) -> None:
        """An event of an agent tool's run (``path`` not empty): its text and tools stay in the
        calling tool's result, but a call of it waiting for approval is the client's to answer
        like the root's own (its id is what ``resume`` answers)."""
        if isinstance(event, ToolApprovalRequested) and self.interrupts:
            self.asked.append(interrupt(event))
        elif isinstance(event, ToolExecutionStarted | ToolResult):
            self._began(event.call_id)

    def _began(self, call_id: str) -> None:
        """A call began (or ended): it waits for nothing any more."""
        self.awaited.discard(call_id)
        self.waiting = [c for c in self.waiting if c != call_id]
        self.asked = [i for i in self.asked if i.id != call_id]

    def _step(self) -> str:
        return f"round {self.round}"

    def _message_id(self) -> str:
        # The round's first message has the id its tool calls name as their parent.
        self.texts += 1
        base = f"{self.prefix}-{self.steps}"
        return base if self.texts == 1 else f"{base}-{self.texts}"

    def _call_start(self, call_id: str, name: str) -> ToolCallStartEvent:
        parent = f"{self.prefix}-{self.steps}"
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


def _usage(final: FinalAnswer) -> TokenUsage | None:
    usage = final.usage
    if usage is None:
        return None
    return TokenUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
    )
