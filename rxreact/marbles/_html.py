"""Compact HTML cards for Jupyter: an :class:`~rxreact.AgentResult` and single events.

A card shows what a person looks for first (the answer, rounds, tokens; an event's kind and
its one interesting field) and folds the rest away in ``<details>``. Everything quoted from a
run is escaped: a model's answer is text, never markup.
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["event_html", "result_html"]

_CARD = (
    "font-family:ui-sans-serif,system-ui,sans-serif;font-size:13px;border:1px solid #d8dde6;"
    "border-radius:6px;padding:8px 10px;margin:2px 0;max-width:760px;background:#fff"
)
_BADGE = "display:inline-block;border-radius:4px;padding:0 6px;margin-right:6px;color:#fff;"
_COLORS = {
    "round_started": "#7a8699",
    "reasoning_delta": "#8e5cc4",
    "text_delta": "#2e9d5b",
    "round_mode_decided": "#556",
    "tool_call_started": "#3b6fd8",
    "tool_call_args_delta": "#7d9be0",
    "tool_execution_started": "#3b6fd8",
    "tool_result": "#3b6fd8",
    "round_finished": "#7a8699",
    "max_rounds_reached": "#c86a00",
    "final_answer": "#2e9d5b",
}
_PREVIEW = 300


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _clip(text: str, limit: int = _PREVIEW) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _badge(text: str, color: str) -> str:
    return f'<span style="{_BADGE}background:{color}">{_e(text)}</span>'


def _usage(usage: Any) -> str:
    if usage is None or not getattr(usage, "total_tokens", None):
        return ""
    prompt, completion = usage.prompt_tokens or 0, usage.completion_tokens or 0
    return f"{usage.total_tokens:,} tokens ({prompt:,} in, {completion:,} out)"


def result_html(result: Any) -> str:
    """The card of an ``AgentResult``: the answer, then rounds, tokens and the turn's messages."""
    facts = [f"{result.rounds} round{'s' * (result.rounds != 1)}"]
    if result.forced:
        facts.append(_badge("forced", _COLORS["max_rounds_reached"]))
    usage = _usage(result.usage)
    if usage:
        facts.append(_e(usage))
    rows = "".join(
        f'<tr><td style="color:#888;padding-right:8px;vertical-align:top">{_e(m.role)}</td>'
        f'<td style="white-space:pre-wrap">{_e(_clip(_message_text(m), 200))}</td></tr>'
        for m in result.messages
    )
    return (
        f'<div class="rxreact-result" style="{_CARD}">'
        f"{_badge('answer', _COLORS['final_answer'])}"
        f'<span style="color:#666">{" · ".join(facts)}</span>'
        f'<div style="white-space:pre-wrap;margin:6px 0">{_e(_clip(result.answer, 2000))}</div>'
        f'<details><summary style="color:#666;cursor:pointer">{len(result.messages)} messages '
        f"in this turn</summary><table>{rows}</table></details></div>"
    )


def _message_text(message: Any) -> str:
    text = str(getattr(message, "content", None) or "")
    calls = getattr(message, "tool_calls", None) or ()
    names = ", ".join(f"{c.name}({c.arguments})" for c in calls)
    return f"{text} → {names}" if names and text else names or text


def _event_detail(event: Any) -> str:
    kind = event.type
    if kind in ("text_delta", "reasoning_delta", "tool_call_args_delta"):
        return f"<code>{_e(repr(event.delta))}</code>"
    if kind == "round_mode_decided":
        return _e(event.mode)
    if kind in ("tool_call_started", "tool_execution_started"):
        return f"<b>{_e(event.name)}</b> <span style='color:#888'>{_e(event.call_id)}</span>"
    if kind == "tool_result":
        mark = "✕ " if event.is_error else ""
        return (
            f"<b>{_e(event.name)}</b> {event.duration_s:.3g} s: "
            f"<span style='white-space:pre-wrap'>{_e(mark + _clip(event.content))}</span>"
        )
    if kind == "round_finished":
        return _e(f"{event.mode}, finish_reason={event.finish_reason}") + (
            f" · {_e(_usage(event.usage))}" if _usage(event.usage) else ""
        )
    if kind == "final_answer":
        forced = " · forced" if event.forced else ""
        return (
            f"<span style='color:#666'>{event.rounds} rounds{forced}</span>"
            f"<div style='white-space:pre-wrap;margin-top:4px'>{_e(_clip(event.text, 2000))}</div>"
        )
    return ""


def event_html(event: Any) -> str:
    """One line for an event: its kind as a coloured badge, its round, its main field."""
    color = _COLORS.get(event.type, "#556")
    seq = getattr(event, "seq", None)
    where = f"round {event.round}" + (f" · #{seq}" if seq else "")
    return (
        f'<div class="rxreact-event" style="{_CARD}">{_badge(event.type, color)}'
        f'<span style="color:#888;margin-right:6px">{_e(where)}</span>{_event_detail(event)}</div>'
    )
