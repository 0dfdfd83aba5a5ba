"""The AI SDK UI message stream's mapping, one agent event at a time: :class:`UIPartMapper`
(the parts each event becomes are listed in :mod:`rxreact.serve.ui_stream`, which runs it).

The mapper keeps the open text / reasoning part and the round's tool calls; it leaves the
``data-*`` parts (approvals, withdrawn text) to :mod:`rxreact.serve.ui_stream._data_parts` and the
events of agents run as tools to :mod:`rxreact.serve.ui_stream._nested_parts`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rxreact.errors import RunCancelledError
from rxreact.events import (
    FinalAnswer,
    GuardrailTripped,
    OutputPartial,
    OutputReset,
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
from rxreact.serve._client_errors import error_text
from rxreact.serve.ui_stream._data_parts import DataParts, output_part
from rxreact.serve.ui_stream._nested_parts import NestedParts

__all__ = ["Part", "UIPartMapper", "error_text"]

Part = dict[str, Any]
"""One UI message stream part, as JSON."""


@dataclass
class _Call:
    call_id: str
    name: str
    arguments: str = ""


@dataclass
class UIPartMapper:
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
        elif isinstance(event, OutputPartial | OutputReset):
            out.append(output_part(event))
        elif isinstance(event, FinalAnswer):
            self._close_open(out)
            if event.output is not None:
                out.append(output_part(event))
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
