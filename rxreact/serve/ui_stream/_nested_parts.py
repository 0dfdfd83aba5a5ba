"""The UI parts of the events of agents run as tools (``agent.as_tool()``, a non-empty
``path``): the child's run shown inside the card of the tool call that runs it.

::

    child events (path=("p1",))             parts
    text_delta, tool_execution_started,     tool-output-available of p1, preliminary: true,
    tool_result (the child's own)           output {"agent", "text", "tools": [{name, state}]}
    tool_approval_requested (any depth)     tool-input-available + tool-approval-request of
                                            that call: a card of its own, answered with
                                            POST .../approve like any other
    its tool_result                         tool-output-available / -error of that call
    anything else                           nothing

The caller's own ``tool_result`` for ``p1`` then replaces the preliminary output with the
child's answer, as the AI SDK does with a tool's last output. Like the rest of the mapping it
is a function of the event sequence, so a resumed stream rebuilds the same parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["NestedParts"]

Part = dict[str, Any]


@dataclass
class _Child:
    """What the card of one agent-tool call shows of the child's run so far."""

    agent: str
    text: str = ""
    tools: dict[str, dict[str, str]] = field(default_factory=dict)

    def output(self) -> dict[str, Any]:
        return {"agent": self.agent, "text": self.text, "tools": list(self.tools.values())}


@dataclass
class NestedParts:
    """The nested events' part of a run's mapping (one per UI stream subscription)."""

    children: dict[str, _Child] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)  # nested calls shown as cards of their own

    def feed(self, event: Any) -> list[Part]:
        kind = event.type
        if kind == "tool_approval_requested":
            self.asked.add(event.call_id)
            return [
                {
                    "type": "tool-input-available",
                    "toolCallId": event.call_id,
                    "toolName": event.name,
                    "input": event.arguments,
                },
                {
                    "type": "tool-approval-request",
                    "approvalId": event.call_id,
                    "toolCallId": event.call_id,
                },
            ]
        out: list[Part] = []
        if kind == "tool_result" and event.call_id in self.asked:
            self.asked.discard(event.call_id)
            out.append(_result(event))
        if len(event.path) != 1:  # a grandchild's inside: its own call shows in its parent
            return out
        call = event.path[0]
        child = self.children.get(call)
        if child is None:
            child = self.children[call] = _Child(event.agent)
        if kind == "round_started":
            child.text = ""  # the card shows the round that answers, as the answer does
            return out
        if kind == "text_delta":
            child.text += event.delta
        elif kind == "tool_execution_started":
            child.tools[event.call_id] = {"name": event.name, "state": "running"}
        elif kind == "tool_result":
            state = "error" if event.is_error else "done"
            child.tools[event.call_id] = {"name": event.name, "state": state}
        else:
            return out
        out.append(
            {
                "type": "tool-output-available",
                "toolCallId": call,
                "output": child.output(),
                "preliminary": True,
            }
        )
        return out


def _result(event: Any) -> Part:
    if event.is_error:
        return {
            "type": "tool-output-error",
            "toolCallId": event.call_id,
            "errorText": event.content,
        }
    return {"type": "tool-output-available", "toolCallId": event.call_id, "output": event.content}
