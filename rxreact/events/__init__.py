"""The events of an agent run: one discriminated union on ``type``.

A run (``ReactAgent.stream``) is one cold ``Observable[AgentEvent]``. For a run with one tool
round the order is::

    round_started(1)  [reasoning_delta]*  [text_delta]*  round_mode_decided(tool_call)
    tool_call_started  tool_call_args_delta*  ...  round_finished(tool_call)
    tool_execution_started*  tool_progress*  tool_result*   (tools run concurrently:
                                                             completion order)
    round_started(2)  round_mode_decided(final_answer)  text_delta*  round_finished(final_answer)
    final_answer                                   (always the last event of a successful run)

Every event carries ``round`` and ``seq`` (its 1-based position in the run, stamped as it is
emitted). At ``max_rounds`` a ``max_rounds_reached`` event precedes the forced round. With a
judge or an ``output_type`` a round's draft answer is checked before the run ends::

    ... round_finished(final_answer)  validation_started  answer_validated(passed=False)
    round_started(n+1) ... round_finished(final_answer)  validation_started
    answer_validated(passed=True)  final_answer(validated=True)

``context_trimmed`` precedes a ``round_started`` whose request had to drop old messages to fit
the agent's context budget. Failures are not events: they end the stream through ``on_error``
with an :class:`~rxreact.RxReactError`.

With input guardrails, ``guardrail_started`` comes first and ``guardrail_passed`` when each
passed (answer text waits for it); a guardrail that trips sends ``guardrail_tripped`` just
before the run's error. An agent called as a tool (``agent.as_tool()``) has its whole run
nested between the caller's ``tool_execution_started`` and ``tool_result`` of that call::

    ... tool_execution_started(p1)  round_started'  text_delta'*  ...  final_answer'
    tool_result(p1) ...                  (primed: agent="researcher", path=("p1",))

Every event carries ``agent`` and ``path`` for that; ``seq`` counts the nested events too.

With an ``output_type`` the answering round's text is read as it streams, and
``output_partial`` events carry the object parsed so far; a rejected draft's are withdrawn by
``output_reset`` before the next round's::

    round_started(n)  text_delta  output_partial  text_delta  text_delta  output_partial ...
    round_finished  validation_started  answer_validated(passed=False)  output_reset(n)
    round_started(n+1)  ...  output_partial ...  final_answer(output=...)

The ``type`` literals and field names are API: they never change meaning. Two families are
defined in modules of their own and importable from here: the per-chunk deltas with their
fast constructor (:mod:`rxreact.events._deltas`) and the checks' events
(:mod:`rxreact.events._checks`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from rxreact.events._base import _Event
from rxreact.events._checks import (
    AnswerValidated,
    GuardrailKind,
    GuardrailPassed,
    GuardrailStarted,
    GuardrailTripped,
    ValidationStarted,
)
from rxreact.events._deltas import ReasoningDelta, TextDelta, delta_event
from rxreact.events._output import OutputPartial, OutputReset
from rxreact.messages import ContentPart, Usage

__all__ = [
    "AgentEvent",
    "AnswerValidated",
    "ContextTrimmed",
    "FinalAnswer",
    "GuardrailKind",
    "GuardrailPassed",
    "GuardrailStarted",
    "GuardrailTripped",
    "Handoff",
    "MaxRoundsReached",
    "OutputPartial",
    "OutputReset",
    "ReasoningDelta",
    "RoundFinished",
    "RoundMode",
    "RoundModeDecided",
    "RoundRestarted",
    "RoundStarted",
    "TextDelta",
    "ToolApprovalRequested",
    "ToolCallArgsDelta",
    "ToolCallStarted",
    "ToolExecutionStarted",
    "ToolProgress",
    "ToolResult",
    "UsagePurpose",
    "ValidationStarted",
    "agent_event_adapter",
    "delta_event",
]

RoundMode = Literal["final_answer", "tool_call"]
UsagePurpose = Literal["rounds", "judge", "summary"]
"""What a request was for: ``rounds`` the agent's model rounds, ``judge`` an
:class:`~rxreact.LLMJudge` verdict, ``summary`` a :class:`~rxreact.ContextBudget` summary."""
"""``final_answer``: the round answers the user; ``tool_call``: the round asks for tools."""


class RoundStarted(_Event):
    """A model request is about to be sent."""

    type: Literal["round_started"] = "round_started"


class RoundModeDecided(_Event):
    """The first chunk carrying text or a tool call decided the round's mode.

    Sent again, with ``mode="tool_call"``, when a round decided ``final_answer`` later calls a tool.
    """

    type: Literal["round_mode_decided"] = "round_mode_decided"
    mode: RoundMode


class ToolCallStarted(_Event):
    """The model began a tool call; its name is known, its arguments are still streaming."""

    type: Literal["tool_call_started"] = "tool_call_started"
    index: int
    """0-based position of the call in its round (not the provider's raw index)."""
    call_id: str
    name: str


class ToolCallArgsDelta(_Event):
    """A piece of a tool call's JSON arguments."""

    type: Literal["tool_call_args_delta"] = "tool_call_args_delta"
    index: int
    """0-based position of the call in its round."""
    delta: str


class ToolApprovalRequested(_Event):
    """A tool call waits for approval before it runs (``@tool(requires_approval=...)``).

    Answer with ``run.approve(call_id)`` / ``run.deny(call_id, reason)`` on a hot run, or the
    agent's ``approver=``. Then ``tool_execution_started`` follows, or a ``tool_result`` that
    says the call was denied.
    """

    type: Literal["tool_approval_requested"] = "tool_approval_requested"
    call_id: str
    name: str
    arguments: dict[str, Any]
    """The validated arguments the tool would run with."""


class ToolExecutionStarted(_Event):
    """A tool began running."""

    type: Literal["tool_execution_started"] = "tool_execution_started"
    call_id: str
    name: str


class ToolProgress(_Event):
    """A running tool reported an intermediate value (an Observable's or async generator's
    values, or a call of its ``progress`` parameter); ``tool_result`` still follows."""

    type: Literal["tool_progress"] = "tool_progress"
    call_id: str
    name: str
    value: Any
    """What the tool reported, as it reported it (JSON-serializable for remote event logs)."""


class ToolResult(_Event):
    """A tool call finished (or failed); ``content`` is what the model will read."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    content: str
    """The result's text; for a result with images or files, its text with each of them
    labelled (``[image: image/png, 1,234 bytes]``)."""
    parts: tuple[ContentPart, ...] = ()
    """The result made of parts, when the tool returned images or files (the model reads
    these); empty for a text result."""
    is_error: bool = False
    """True when the call failed (unknown tool, bad arguments, exception, timeout)."""
    duration_s: float
    """Time from execution start to result, in scheduler time (virtual under a TestScheduler)."""


class RoundFinished(_Event):
    """The model's response for this round ended."""

    type: Literal["round_finished"] = "round_finished"
    mode: RoundMode
    finish_reason: str | None = None
    usage: Usage | None = None


class MaxRoundsReached(_Event):
    """``max_rounds`` rounds all called tools: a forced round follows."""

    type: Literal["max_rounds_reached"] = "max_rounds_reached"


class RoundRestarted(_Event):
    """The run moved to another worker (its process stopped) and this round is requested
    again: forget the text, reasoning and tool-call deltas seen for it so far; they stream
    again from the new ``round_started``. ``seq`` goes on: nothing before this is repeated."""

    type: Literal["round_restarted"] = "round_restarted"
    reason: str
    """Why the round restarted (which worker stopped, and when it was resumed)."""


class ContextTrimmed(_Event):
    """The next request drops old messages to fit the agent's ``ContextBudget``."""

    type: Literal["context_trimmed"] = "context_trimmed"
    dropped_messages: int
    """Messages of the history not sent (replaced by a summary with ``strategy="summarize"``)."""
    estimated_tokens: int
    """The estimated prompt tokens of the request as sent."""


class Handoff(_Event):
    """The model called ``transfer_to_<name>``: the rest of the turn is run by ``to_agent``,
    with the conversation so far. Events after this one carry ``to_agent`` as their ``agent``."""

    type: Literal["handoff"] = "handoff"
    from_agent: str
    """The name of the agent that handed the turn over."""
    to_agent: str
    """The name of the agent that runs the rest of it."""
    call_id: str
    """The ``transfer_to_<name>`` call that asked for it."""


class FinalAnswer(_Event):
    """The run's answer; always the last event of a successful run."""

    type: Literal["final_answer"] = "final_answer"
    text: str
    """The text of the final round only."""
    rounds: int
    """Model requests made by the run, the forced one included."""
    forced: bool = False
    """True when the answer came from the forced round after ``max_rounds``."""
    usage: Usage | None = None
    """Usage summed over every request of the run: rounds, judge and summary requests
    (``None`` when none reported any)."""
    usage_by_purpose: dict[UsagePurpose, Usage] = Field(default_factory=dict)
    """``usage`` split by what the requests were for; a purpose without usage is absent."""
    usage_by_agent: dict[str, Usage] = Field(default_factory=dict)
    """``usage`` split by the ``name`` of the agent that made the requests: this run's own and
    those of the agents it ran as tools (``agent.as_tool()``), at every depth."""
    validated: bool | None = None
    """The judge's / ``output_type``'s verdict on this answer; ``None``: no check, or the judge
    could not run."""
    output: Any = None
    """With ``output_type``: the answer parsed into it (``None`` if it never validated).
    Serialized as JSON it reads back as a plain object."""


AgentEvent = Annotated[
    RoundStarted
    | ReasoningDelta
    | TextDelta
    | RoundModeDecided
    | ToolCallStarted
    | ToolCallArgsDelta
    | ToolApprovalRequested
    | ToolExecutionStarted
    | ToolProgress
    | ToolResult
    | RoundFinished
    | MaxRoundsReached
    | RoundRestarted
    | ValidationStarted
    | AnswerValidated
    | ContextTrimmed
    | GuardrailStarted
    | GuardrailPassed
    | GuardrailTripped
    | Handoff
    | OutputPartial
    | OutputReset
    | FinalAnswer,
    Field(discriminator="type"),
]
"""Any agent event, discriminated on ``type``."""

agent_event_adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)
"""Validates / serializes :data:`AgentEvent` values (e.g. ``agent_event_adapter.validate_json``)."""
