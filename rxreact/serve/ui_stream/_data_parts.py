"""The UI parts of events the AI SDK stream has no part of its own for: text taken back and
approvals decided, as ``data-*`` parts (the stream's extension point; ``useChat`` keeps them in
the message, the chat page acts on them).

::

    round_restarted(n, reason)      data-round-restarted {round, reason, partIds, toolCallIds}:
                                    the interrupted round's text / reasoning parts and tool
                                    calls, which stream again under new ids
    guardrail_tripped               data-guardrail-tripped {guardrail, kind, reason, withdrawn,
                                    partIds}: the round's text parts already sent, taken back
    tool_execution_started of a     data-approval {approvalId, approved: true}
    call that waited for approval
    tool_result of a call that      data-approval {approvalId, approved: false, reason}: no
    waited and never ran            execution started, so it was denied (or timed out); its
                                    tool-output-available (the denial the model reads) follows

The parts name the ids the stream gave before, so a client removes exactly what it showed;
like the rest of the mapping this is a function of the event sequence, and a resumed stream
names the same ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic_core import to_jsonable_python

__all__ = ["DataParts", "output_part"]

Part = dict[str, Any]


def output_part(event: Any) -> Part:
    """The typed answer so far (``output_partial``), withdrawn (``output_reset``) or final
    (``final_answer``), as one ``data-output`` part: one id per round, so a client replaces
    the card's value with each (the AI SDK keeps the latest data part of an id)."""
    data: dict[str, Any] = {"round": event.round}
    if event.type == "output_partial":
        data["output"] = event.output
    elif event.type == "output_reset":
        data.update(output=None, reset=event.reason)
    else:
        data.update(output=to_jsonable_python(event.output), final=True)
    return {"type": "data-output", "id": f"output-{event.round}", "data": data}


@dataclass
class DataParts:
    """What one subscription's mapping sent of the current round, and the calls asked about."""

    part_ids: list[str] = field(default_factory=list)  # text and reasoning parts of the round
    text_ids: list[str] = field(default_factory=list)  # its text parts alone
    call_ids: list[str] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)

    def round_started(self) -> None:
        self.part_ids, self.text_ids, self.call_ids = [], [], []

    def sent(self, parts: list[Part]) -> None:
        """Note the ids of the parts the mapping just made for a root event."""
        for part in parts:
            kind = part["type"]
            if kind == "text-start":
                self.part_ids.append(part["id"])
                self.text_ids.append(part["id"])
            elif kind == "reasoning-start":
                self.part_ids.append(part["id"])
            elif kind == "tool-input-start":
                self.call_ids.append(part["toolCallId"])
            elif kind == "tool-approval-request":
                self.asked.add(part["toolCallId"])

    def restarted(self, event: Any) -> Part:
        data = {
            "round": event.round,
            "reason": event.reason,
            "partIds": self.part_ids,
            "toolCallIds": self.call_ids,
        }
        self.round_started()  # the round starts over: nothing of it is shown any more
        return {"type": "data-round-restarted", "data": data}

    def tripped(self, event: Any) -> Part:
        data = {
            "guardrail": event.guardrail,
            "kind": event.kind,
            "reason": event.reason,
            "withdrawn": event.withdrawn,
            "partIds": self.text_ids,
        }
        return {"type": "data-guardrail-tripped", "data": data}

    def decided(self, event: Any) -> list[Part]:
        """The decision on the call of a ``tool_execution_started`` (approved) or a
        ``tool_result`` (denied, as no execution started), if the call waited for one."""
        if event.call_id not in self.asked:
            return []
        self.asked.discard(event.call_id)
        approved = event.type == "tool_execution_started"
        data: dict[str, Any] = {"approvalId": event.call_id, "approved": approved}
        if not approved:
            data["reason"] = event.content
        return [{"type": "data-approval", "data": data}]
