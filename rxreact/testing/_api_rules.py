"""The request rules of the real chat-completions API that the mock server enforces (HTTP 400)."""

from __future__ import annotations

from typing import Any

__all__ = ["history_error"]


def history_error(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives for this body's tools and history, if any."""
    if body.get("tool_choice") is not None and not body.get("tools"):
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified."
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': expected a non-empty array of messages."
    pending: list[str] = []  # ids of the last assistant tool calls not answered yet
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (no open call has id {call_id!r})."
                )
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending)
        if role == "assistant":
            pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
    return _unanswered(pending) if pending else None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(ids)
    )
