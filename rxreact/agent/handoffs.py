"""Handoffs: ``ReactAgent(handoffs=[billing, tech])`` lets the model pass the turn on.

Each target becomes a tool, ``transfer_to_<name>``, described by the target's
``description``. When the model calls one, the call's result says so, a ``handoff`` event
follows the tool round, and the run goes on with the target's model, tools (its own handoffs
included), instructions and round budget, on the same history: the question, every round so
far, the transfer call and its result::

    triage:   R-c-f  S-r  H(triage->billing)
    billing:                R-t-t-f  F              (events marked agent="billing")
    memory:   the whole turn, once, in the first agent's conversation

``max_handoffs`` (the first agent's) bounds the passes of one turn: one more ends the run
with :class:`~rxreact.MaxHandoffsExceededError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rxreact._validate import described
from rxreact.errors import InvalidArgumentError, MaxHandoffsExceededError, ToolDefinitionError
from rxreact.events import Handoff, ToolResult
from rxreact.messages import ToolCall
from rxreact.tools.tool import TOOL_NAME, Tool

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent
    from rxreact.agent.run_loop import RunLoop

__all__ = ["HANDOFF_PREFIX", "HandoffTo", "handoff_after", "handoff_tools"]

HANDOFF_PREFIX = "transfer_to_"
"""The tool that hands the turn to agent ``name`` is ``transfer_to_<name>``."""


def handoff_tools(targets: Iterable[Any]) -> dict[str, tuple[Tool[..., Any], ReactAgent]]:
    """One ``transfer_to_<name>`` tool per target, by tool name, with its target.

    Raises:
        InvalidArgumentError: a target that is not a ``ReactAgent``, or two with one name.
        ToolDefinitionError: a name that makes no valid tool name.
    """
    from rxreact.agent.react_agent import ReactAgent

    if isinstance(targets, ReactAgent):
        raise InvalidArgumentError("handoffs must be a list of agents: write handoffs=[agent]")
    tools: dict[str, tuple[Tool[..., Any], ReactAgent]] = {}
    for target in targets:
        if not isinstance(target, ReactAgent):
            raise InvalidArgumentError(f"handoffs must hold ReactAgents, got {described(target)}")
        name = f"{HANDOFF_PREFIX}{target.name}"
        if not TOOL_NAME.fullmatch(name):
            raise ToolDefinitionError(
                f"handoff tool {name!r} is not a valid tool name: give the agent a name of "
                f"letters, digits, '_' or '-' (ReactAgent(name=...))"
            )
        if name in tools:
            raise InvalidArgumentError(f"two handoff targets are named {target.name!r}")
        tools[name] = (_transfer(name, target), target)
    return tools


def _transfer(name: str, target: ReactAgent[Any]) -> Tool[..., Any]:
    said = f"Transferred to {target.name}: the conversation continues with them."

    def transfer(**_: Any) -> str:  # whatever the model adds (a reason...) changes nothing
        return said

    purpose = target.description or f"the {target.name} agent"
    return Tool(
        name=name,
        description=f"Hand the conversation over to {target.name}: {purpose}",
        parameters={"type": "object", "properties": {}, "additionalProperties": False},
        function=transfer,
    )


@dataclass(frozen=True)
class HandoffTo:
    """A handoff a tool round asked for: its event and the agent that takes the turn."""

    event: Handoff
    target: ReactAgent[Any]


def handoff_after(
    run: RunLoop, calls: Sequence[ToolCall], results: Sequence[ToolResult | None], number: int
) -> HandoffTo | None:
    """The handoff the round's first successful ``transfer_to_<name>`` call asks for (counted
    on ``run``), or ``None``.

    Raises:
        MaxHandoffsExceededError: one handoff more than the first agent's ``max_handoffs``.
    """
    agent = run.agent
    for call, result in zip(calls, results, strict=True):
        target = agent.handoffs.get(call.name)
        if target is None or result is None or result.is_error:
            continue
        run.handoffs += 1
        limit = run.owner.max_handoffs
        if run.handoffs > limit:
            raise MaxHandoffsExceededError(
                f"the turn was handed over more than max_handoffs={limit} times "
                f"(last: {agent.name} -> {target.name})"
            )
        event = Handoff(round=number, from_agent=agent.name, to_agent=target.name, call_id=call.id)
        return HandoffTo(event, target)
    return None
