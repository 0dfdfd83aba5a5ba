"""Agent events as the Vercel AI SDK UI message stream (protocol v1), the wire format of
``useChat`` and of the ``ai`` package's ``readUIMessageStream``.

A run's events map onto stream parts one to one or one to a few; the mapping keeps the open
text / reasoning part and the round's tool calls, so it is a function of the whole event
sequence from ``seq`` 1. A resumed stream replays the run from its first event through the same
mapping and only *sends* the parts of events after ``Last-Event-ID``: the part ids the client
already holds stay valid.

::

    round_started(1)            start, start-step
    reasoning_delta             reasoning-start (first), reasoning-delta
    text_delta                  [reasoning-end], text-start (first), text-delta
    tool_call_started           [text-end], tool-input-start
    tool_call_args_delta        tool-input-delta
    round_finished              [text-end], tool-input-available per call (arguments parsed)
    tool_approval_requested     tool-approval-request (approvalId = the call id)
    tool_progress               tool-output-available with preliminary: true
    tool_execution_started      data-approval (approved) when the call waited for approval
    tool_result                 [data-approval (denied)], tool-output-available, or
                                tool-output-error when is_error
    round_restarted             [text-end], data-round-restarted (the ids to withdraw)
    guardrail_tripped           [text-end], data-guardrail-tripped (the ids to withdraw)
    round_started(n > 1)        finish-step, start-step
    final_answer                [text-end], finish-step, finish
    events of agents run as     the calling tool's preliminary output; their approval
    tools (path != ())          requests as cards of their own (rxreact.serve._nested_parts)
    on_error                    [text-end], finish-step, error, finish(error)  -- or abort
                                when the run was cancelled; the part stream then completes

Each part travels as one SSE event ``id: <seq>`` / ``data: <json>``; the stream ends with
``data: [DONE]``. The parts of one agent event share its ``seq`` and are written together.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from reactivex import Observable, abc

from rxreact.errors import RunCancelledError, RxReactError
from rxreact.events import (
    FinalAnswer,
    GuardrailTripped,
    ReasoningDelta,
    RoundFinished,
    RoundRestarted,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolExecutionStarted,
    ToolProgress,
    ToolResult,
)
from rxreact.serve._data_parts import DataParts
from rxreact.serve._nested_parts import NestedParts

__all__ = ["DONE", "UI_MESSAGE_STREAM_HEADERS", "UIChunk", "to_ui_message_stream"]

Part = dict[str, Any]

UI_MESSAGE_STREAM_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (as the AI SDK sends them)."""

DONE = "data: [DONE]\n\n"
"""The SSE event that ends a UI message stream."""


@dataclass(frozen=True, slots=True)
class UIChunk:
    """One UI message stream part and the ``seq`` of the agent event it came from."""

    seq: int | None
    """The event's ``seq`` (the SSE ``id``); ``None`` for the closing parts of a failed run."""
    part: Part
    """The part as the AI SDK's ``uiMessageChunkSchema`` describes it (``type`` first)."""

    def to_sse(self) -> str:
        """The part as one SSE event."""
        data = json.dumps(self.part, ensure_ascii=False, separators=(",", ":"))
        return f"data: {data}\n\n" if self.seq is None else f"id: {self.seq}\ndata: {data}\n\n"


@dataclass
class _Call:
    call_id: str
    name: str
    arguments: str = ""


@dataclass
class _Mapper:
    """The per-subscription state of the mapping: open parts and the round's tool calls."""

    message_id: str | None
    started: bool = False
    step_open: bool = False
    text_id: str | None = None
    reasoning_id: str | None = None
    parts_made: int = 0
    calls: dict[int, _Call] = field(default_factory=dict)
    nested: NestedParts = field(default_factory=NestedParts)
    data: DataParts = field(default_factory=DataParts)

    def feed(self, event: Any) -> list[Part]:
        out = self._feed(event)
        self.data.sent(out)
        return out

    def _feed(self, event: Any) -> list[Part]:
        out: list[Part] = []
        if isinstance(event, ToolExecutionStarted | ToolResult):  # at any depth: decided?
            out.extend(self.data.decided(event))
        if event.path:  # a run of an agent tool: inside the card of the call that runs it
            return out + self.nested.feed(event)
        if isinstance(event, TextDelta):
            self._close_reasoning(out)
            if self.text_id is None:
                self.text_id = self._new_id("text", event.round)
                out.append({"type": "text-start", "id": self.text_id})
            out.append({"type": "text-delta", "id": self.text_id, "delta": event.delta})
        elif isinstance(event, ReasoningDelta):
            if self.reasoning_id is None:
                self.reasoning_id = self._new_id("reasoning", event.round)
                out.append({"type": "reasoning-start", "id": self.reasoning_id})
            out.append({"type": "reasoning-delta", "id": self.reasoning_id, "delta": event.delta})
        elif isinstance(event, ToolCallArgsDelta):
            call = self.calls[event.index]
            call.arguments += event.delta
            out.append(
                {
                    "type": "tool-input-delta",
                    "toolCallId": call.call_id,
                    "inputTextDelta": event.delta,
                }
            )
        elif isinstance(event, RoundStarted):
            if not self.started:
                self.started = True
                out.append(
                    {"type": "start", "messageId": self.message_id}
                    if self.message_id
                    else {"type": "start"}
                )
            self._finish_step(out)
            out.append({"type": "start-step"})
            self.step_open = True
            self.calls = {}
            self.data.round_started()
        elif isinstance(event, RoundRestarted):
            # The round streams again under new ids: close what is open, name what to remove.
            self._close_open(out)
            out.append(self.data.restarted(event))
            self.calls = {}
        elif isinstance(event, GuardrailTripped):
            self._close_open(out)  # the error part follows; the text sent so far is taken back
            out.append(self.data.tripped(event))
        elif isinstance(event, ToolCallStarted):
            self._close_open(out)
            self.calls[event.index] = _Call(event.call_id, event.name)
            out.append(
                {"type": "tool-input-start", "toolCallId": event.call_id, "toolName": event.name}
            )
        elif isinstance(event, RoundFinished):
            self._close_open(out)
            for call in self.calls.values():
                out.append(
                    {
                        "type": "tool-input-available",
                        "toolCallId": call.call_id,
                        "toolName": call.name,
                        "input": _parse_arguments(call.arguments),
                    }
                )
        elif isinstance(event, ToolApprovalRequested):
            # One approval per call: its id is the call's, which POST .../approve takes back.
            out.append(
                {
                    "type": "tool-approval-request",
                    "approvalId": event.call_id,
                    "toolCallId": event.call_id,
                }
            )
        elif isinstance(event, ToolProgress):
            out.append(
                {
                    "type": "tool-output-available",
                    "toolCallId": event.call_id,
                    "output": event.value,
                    "preliminary": True,
                }
            )
        elif isinstance(event, ToolResult):
            if event.is_error:
                out.append(
                    {
                        "type": "tool-output-error",
                        "toolCallId": event.call_id,
                        "errorText": event.content,
                    }
                )
            else:
                out.append(
                    {
                        "type": "tool-output-available",
                        "toolCallId": event.call_id,
                        "output": event.content,
                    }
                )
        elif isinstance(event, FinalAnswer):
            self._finish_step(out)
            out.append({"type": "finish", "finishReason": "stop"})
        # round_mode_decided, max_rounds_reached and event kinds this
        # mapping does not know carry nothing the UI message stream has a part for.
        return out

    def fail(self, error: Exception) -> list[Part]:
        out: list[Part] = []
        self._finish_step(out)
        if isinstance(error, RunCancelledError):
            out.append({"type": "abort", "reason": "cancelled"})
        else:
            out.append({"type": "error", "errorText": error_text(error)})
            out.append({"type": "finish", "finishReason": "error"})
        return out

    def _new_id(self, kind: str, round_: int) -> str:
        self.parts_made += 1
        return f"{kind}-{round_}-{self.parts_made}"

    def _close_reasoning(self, out: list[Part]) -> None:
        if self.reasoning_id is not None:
            out.append({"type": "reasoning-end", "id": self.reasoning_id})
            self.reasoning_id = None

    def _close_open(self, out: list[Part]) -> None:
        self._close_reasoning(out)
        if self.text_id is not None:
            out.append({"type": "text-end", "id": self.text_id})
            self.text_id = None

    def _finish_step(self, out: list[Part]) -> None:
        self._close_open(out)
        if self.step_open:
            out.append({"type": "finish-step"})
            self.step_open = False


def _parse_arguments(raw: str) -> Any:
    """The call's arguments as JSON; malformed ones as the raw text (the run reports them)."""
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def error_text(error: BaseException) -> str:
    """What a browser is told about a failed run: rxreact's own errors by name and message
    (they never carry secrets), anything else only by its type."""
    if isinstance(error, RxReactError):
        return f"{type(error).__name__}: {error}"
    return f"internal error ({type(error).__name__})"


def to_ui_message_stream(
    message_id: str | None = None, *, after: int = 0
) -> Callable[[Observable[Any]], Observable[UIChunk]]:
    """Map a run's events (from its first, ``seq`` 1) to UI message stream parts.

    ::

        events:  -R1--T--T--F|                  R: round_started, T: text_delta,
                                                F: final_answer
        result:  -(s,ss)--(ts,td)--td--(te,fs,f)|
                                                s: start, ss: start-step, ts: text-start,
                                                td: text-delta, te: text-end,
                                                fs: finish-step, f: finish

        events:  -R1--T--#                      the run failed
        result:  -(s,ss)--(ts,td)--(te,fs,e,f)| e: error, f: finish(error); no error out

    The result never errors for the run's error: it becomes parts and the stream completes
    (a browser gets a readable ending, not a dropped connection). A failure of the mapping
    itself still goes to ``on_error``.

    Args:
        message_id: sent as the ``start`` part's ``messageId`` (the server uses the run id).
        after: parts of events with ``seq <= after`` update the state but are not emitted:
            the ``Last-Event-ID`` of a resumed stream.

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[UIChunk]``.
    """

    def operator(source: Observable[Any]) -> Observable[UIChunk]:
        def subscribe(
            observer: abc.ObserverBase[UIChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            mapper = _Mapper(message_id)
            count = 0

            def on_next(event: Any) -> None:
                nonlocal count
                count += 1
                # seq is the event's 1-based position in its run; counting gives the same
                # number for events that carry none.
                seq = getattr(event, "seq", None) or count
                try:
                    parts = mapper.feed(event)
                except Exception as error:  # a bug in the mapping, not the run's error
                    observer.on_error(error)
                    return
                if seq > after:
                    for part in parts:
                        observer.on_next(UIChunk(seq, part))

            def on_error(error: Exception) -> None:
                for part in mapper.fail(error):
                    observer.on_next(UIChunk(None, part))
                observer.on_completed()

            return source.subscribe(on_next, on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
