"""A tool call waiting for approval as an AG-UI ``Interrupt``: :func:`interrupt`, and the
``reason`` and answer schema every such interrupt carries."""

from __future__ import annotations

import json

from ag_ui.core import Interrupt

from rxreact.events import ToolApprovalRequested

__all__ = ["APPROVAL_REASON", "interrupt"]

APPROVAL_REASON = "tool_approval"
"""The ``reason`` of the interrupt a tool call waiting for approval raises."""

_APPROVAL_SCHEMA = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
}


def interrupt(event: ToolApprovalRequested) -> Interrupt:
    """The interrupt that asks the client to approve or deny ``event``'s call (its id is the
    call's: what ``resume`` answers)."""
    arguments = json.dumps(event.arguments, ensure_ascii=False, default=str)
    return Interrupt(
        id=event.call_id,
        reason=APPROVAL_REASON,
        message=f"{event.name}({arguments}) waits for approval",
        tool_call_id=event.call_id,
        response_schema=_APPROVAL_SCHEMA,
        metadata={"toolName": event.name, "arguments": event.arguments},
    )
