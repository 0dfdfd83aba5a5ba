"""Runs of agents called as tools (``agent.as_tool()``), drawn as bands under the tool lane.

The diagram's own lanes are the root run's; each call of an agent tool gets one row, a band
from the child run's first event to its last, right under the bar of the call that ran it::

    tools        ▭▭▭▭▭▭▭▭▭▭▭▭▭▭▭▭▭▭▭ researcher (p1)
    ↳ researcher    [ ▬▬  ·  · · · ]       the child's tools (bars) and answer text (dots)

Deeper runs (a child's own agent tools) widen their ancestor's band; their insides are in
the recording's ``researcher/...`` lanes, not drawn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

from rxreact.marbles._svg_canvas import COLORS, Canvas, Scale, clip, dot

if TYPE_CHECKING:
    from rxreact.marbles.recording import Recording

__all__ = ["NestedRun", "draw_nested", "nested_runs", "root_only"]

NESTED_FILL = "#eef3fb"
NESTED_STROKE = "#9db3de"


@dataclass(frozen=True)
class NestedRun:
    """One call of an agent tool, as its band shows it."""

    call_id: str
    agent: str
    start: float
    end: float
    tools: tuple[tuple[float, float, str, bool], ...]
    """The child's own tool executions: start, end, name, failed."""
    text: tuple[float, ...]
    """When the child's answer text arrived."""
    answer: str


def root_only(recording: Recording) -> Recording:
    """``recording`` without the events of nested runs (the diagram's lanes are the root's)."""
    from rxreact.marbles.recording import Recording

    marbles = [m for m in recording.marbles if not getattr(m.value, "path", ())]
    return Recording(marbles, start=recording.start, virtual=recording.virtual)


def nested_runs(recording: Recording) -> list[NestedRun]:
    """The bands: one per call of an agent tool by the root run, in order of start."""
    found: dict[str, dict[str, Any]] = {}
    for marble in recording.marbles:
        path = getattr(marble.value, "path", ())
        if marble.kind != "next" or not path:
            continue
        run = found.setdefault(
            path[0],
            {"agent": "", "start": marble.time, "end": marble.time, "tools": {}, "text": []},
        )
        run["end"] = marble.time
        if len(path) != 1:
            continue
        event = marble.value
        run["agent"] = event.agent
        kind = event.type
        if kind == "round_started":
            run["text"] = []  # the band shows the round that answers
        elif kind == "text_delta":
            run["text"].append(marble.time)
        elif kind == "tool_execution_started":
            run["tools"][event.call_id] = [marble.time, None, event.name, False]
        elif kind == "tool_result" and event.call_id in run["tools"]:
            run["tools"][event.call_id][1:] = [marble.time, event.name, event.is_error]
        elif kind == "final_answer":
            run["answer"] = event.text
    return [
        NestedRun(
            call_id=call_id,
            agent=run["agent"] or "agent",
            start=run["start"],
            end=run["end"],
            tools=tuple(
                (start, recording.end if end is None else end, name, failed)
                for start, end, name, failed in run["tools"].values()
            ),
            text=tuple(run["text"]),
            answer=run.get("answer", ""),
        )
        for call_id, run in found.items()
    ]


def draw_nested(canvas: Canvas, scale: Scale, run: NestedRun, middle: float) -> None:
    """The band of one child run: its extent, its tools as thin bars, its text as dots."""
    canvas.mark("nested run")
    x0, x1 = scale.x(run.start), max(scale.x(run.end), scale.x(run.start) + 3)
    tip = f"{run.agent} ({run.call_id}): {clip(run.answer, 300) or '(no answer)'}"
    canvas.add(
        f'<rect x="{x0:.1f}" y="{middle - 10}" width="{x1 - x0:.1f}" height="20" rx="4" '
        f'fill="{NESTED_FILL}" stroke="{NESTED_STROKE}"><title>{escape(tip)}</title></rect>'
    )
    for start, end, name, failed in run.tools:
        canvas.mark("tool error" if failed else "tool run")
        fill, stroke = (
            (COLORS["error_fill"], COLORS["error"])
            if failed
            else (COLORS["tool_fill"], COLORS["tool"])
        )
        a, b = scale.x(start), max(scale.x(end), scale.x(start) + 2)
        canvas.add(
            f'<rect x="{a:.1f}" y="{middle - 7}" width="{b - a:.1f}" height="6" rx="2" '
            f'fill="{fill}" stroke="{stroke}"><title>{escape(name)}</title></rect>'
        )
    if run.text:
        canvas.mark("text")
    for at in run.text:
        canvas.add(dot(scale.x(at), middle + 4, 3, COLORS["answer"], f"{run.agent}: text"))
