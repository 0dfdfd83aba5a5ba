"""A lost run read back from its checkpoints: its turn so far, its counters, and where it
stopped (:mod:`rxreact.agent.resume` goes on from there).

Checkpoints come in the order they were written (:mod:`rxreact.runs.checkpoints`): ``start``,
then per round a ``response``, its ``tool`` results (in the order they finished) and maybe a
``note``; a ``lease`` wherever a resumed run took the conversation's lease over. The rebuilt
turn puts each round's tool messages in call order, as the run did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rxreact.errors import RunError
from rxreact.events import ToolResult
from rxreact.memory.lease import Lease
from rxreact.messages import AssistantMessage, Message, ToolMessage, Usage, UserMessage
from rxreact.runs.checkpoints import Checkpoint, decode_checkpoint
from rxreact.runs.takeover import LostRun

__all__ = ["Rebuilt", "Refused", "rebuild"]


class Refused(Exception):
    """The run cannot be resumed here; ``reason`` says why (it goes to its followers)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Rebuilt:
    """What a lost run had finished, from its checkpoints."""

    question: UserMessage
    conversation_id: str | None
    turn: list[Message] = field(default_factory=list)
    """Every message after the question, tool messages in call order."""
    rounds: int = 0
    forced: bool = False
    usage: Usage | None = None
    usage_by_purpose: dict[str, Usage] = field(default_factory=dict)
    revisions: int = 0
    tool_errors: int = 0
    last: AssistantMessage | None = None
    """The last round's response, when nothing came after it but its tool results."""
    results: dict[str, ToolResult] = field(default_factory=dict)
    """The recorded results of :attr:`last`'s tool calls, by call id."""
    lease: Lease | None = None
    """The last conversation lease recorded (the start's, or the one a resume took over):
    the one to hand over to the run's next owner."""
    deps: bool = False
    """The run was given deps (its resumer must make them: ``deps_factory``)."""
    user: str | None = None
    """The user a server started the run for."""


def rebuild(lost: LostRun, agent_name: str | None, tool_names: list[str]) -> Rebuilt:
    """Read ``lost`` back, or raise :class:`Refused` (corrupt, or not this agent's run)."""
    if lost.error is not None:
        raise Refused(lost.error)
    try:
        checkpoints = [decode_checkpoint(body, label) for label, body in lost.checkpoints]
    except RunError as error:
        raise Refused(str(error)) from error
    if not checkpoints or checkpoints[0].kind != "start":
        raise Refused(f"run {lost.run_id!r} stopped before its start was recorded")
    start = checkpoints[0]
    if start.agent != agent_name:
        raise Refused(f"run {lost.run_id!r} belongs to agent {start.agent!r}, not {agent_name!r}")
    if sorted(start.tools) != sorted(tool_names):
        raise Refused(
            f"run {lost.run_id!r} was started with tools {sorted(start.tools)}; the agent "
            f"that claimed it has {sorted(tool_names)}"
        )
    question = start.messages[0] if start.messages else None
    if not isinstance(question, UserMessage):
        raise Refused(f"the start of run {lost.run_id!r} has no question")
    state = Rebuilt(
        question, start.conversation_id, lease=start.lease, deps=start.deps, user=start.user
    )
    for checkpoint in checkpoints[1:]:
        if checkpoint.kind == "response" and checkpoint.agent != start.agent:
            raise Refused(
                f"run {lost.run_id!r} was handed off to agent {checkpoint.agent!r}: "
                "resuming a run after a handoff is not supported"
            )
        _apply(state, checkpoint)
    return state


def _apply(state: Rebuilt, checkpoint: Checkpoint) -> None:
    if checkpoint.kind == "lease":
        state.lease = checkpoint.lease
        return
    if checkpoint.kind == "tool":
        if checkpoint.result is None or state.last is None:
            raise Refused("a tool result was recorded without the response that asked for it")
        state.results[checkpoint.result.call_id] = checkpoint.result
        state.tool_errors += checkpoint.result.is_error
        return
    _close_round(state)
    counters: dict[str, Any] = {
        "usage": checkpoint.usage,
        "usage_by_purpose": dict(checkpoint.usage_by_purpose),
        "revisions": checkpoint.revisions,
    }
    for name, value in counters.items():
        setattr(state, name, value)
    message = checkpoint.messages[0] if checkpoint.messages else None
    if message is None:
        raise Refused(f"a {checkpoint.kind} checkpoint holds no message")
    state.turn.append(message)
    if checkpoint.kind == "response":
        if not isinstance(message, AssistantMessage):
            raise Refused("a response checkpoint holds no assistant message")
        state.rounds, state.forced, state.last = checkpoint.round, checkpoint.forced, message


def _close_round(state: Rebuilt) -> None:
    """Before the next response or note: the last round's tool messages, in call order."""
    last = state.last
    if last is None:
        return
    for call in last.tool_calls:
        result = state.results.get(call.id)
        if result is None:
            raise Refused(f"the next round was recorded before the result of call {call.id}")
        state.turn.append(
            ToolMessage(
                tool_call_id=call.id, content=result.parts or result.content, name=call.name
            )
        )
    state.last, state.results = None, {}
