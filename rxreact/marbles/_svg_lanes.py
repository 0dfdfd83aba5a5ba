"""The SVG lanes: round bars, tool-execution bars, marbles, and density bins for crowded lanes.

Which spans there are and how they are packed into rows is :mod:`rxreact.marbles._svg_spans`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

from rxreact.marbles._svg_canvas import (
    CHAR_W,
    CHECK_COLORS,
    CHUNK_COLORS,
    COLORS,
    LANE_COLORS,
    Canvas,
    Scale,
    bars,
    clip,
    density,
    diamond,
    dot,
)
from rxreact.marbles._svg_spans import (
    Execution,
    RoundSpan,
    bar_extent,
    bar_label,
    executions,
    pack,
    round_spans,
)
from rxreact.marbles.lanes import symbolize

if TYPE_CHECKING:
    from rxreact.marbles.recording import Marble, Recording

__all__ = [
    "Execution",
    "RoundSpan",
    "draw_calls",
    "draw_points",
    "draw_rounds",
    "draw_tools",
    "executions",
    "pack",
    "round_spans",
]


def draw_rounds(
    canvas: Canvas,
    scale: Scale,
    recording: Recording,
    rounds: Sequence[RoundSpan],
    y: float,
    max_marks: int,
) -> None:
    """Each round a bar: grey until its mode is decided, then the mode's colour."""
    if len(rounds) > max_marks:
        density(canvas, scale, [r.start for r in rounds], y, COLORS["tool"], "rounds started")
        return
    for span in rounds:
        stop = span.finished if span.finished is not None else span.end
        edges = [(span.start, "undecided"), *span.decisions, (stop, "")]
        for (a, mode), (b, _) in itertools.pairwise(edges):
            color = {"final_answer": COLORS["answer"], "tool_call": COLORS["tool"]}.get(
                mode, COLORS["undecided"]
            )
            tip = f"round {span.number}: {mode} {scale.label(a)}–{scale.label(b)}"
            width = max(1.5, scale.x(b) - scale.x(a))
            canvas.mark(
                {"final_answer": "answer round", "tool_call": "tool round"}.get(mode, "undecided")
            )
            canvas.add(
                f'<rect x="{scale.x(a):.1f}" y="{y - 5}" width="{width:.1f}" height="10" rx="2" '
                f'fill="{color}"><title>{escape(tip)}</title></rect>'
            )
        for i, (t, mode) in enumerate(span.decisions):
            color = COLORS["answer"] if mode == "final_answer" else COLORS["tool"]
            stroke = COLORS["forced"] if i else "#fff"
            tip = ("switched to " if i else "mode decided: ") + mode
            canvas.add(diamond(scale.x(t), y, color, stroke, tip))
            canvas.mark("mode switched" if i else "mode decided")
    for marble in recording.marbles:
        kind = getattr(marble.value, "type", None) if marble.kind == "next" else None
        x = scale.x(marble.time)
        if kind == "max_rounds_reached":
            canvas.mark("max rounds")
            canvas.add(
                f'<path d="M{x - 6:.1f},{y - 15} L{x + 6:.1f},{y - 15} L{x:.1f},{y - 6} Z" '
                f'fill="{COLORS["forced"]}"><title>max_rounds_reached after round '
                f"{marble.value.round}</title></path>"
            )
        elif kind == "final_answer":
            tip = f"final_answer ({marble.value.rounds} rounds): {clip(marble.value.text, 300)}"
            canvas.mark("final answer")
            canvas.add(
                f'<circle cx="{x:.1f}" cy="{y}" r="6.5" fill="#fff" stroke="{COLORS["answer"]}" '
                f'stroke-width="2.5"><title>{escape(tip)}</title></circle>'
            )


def draw_tools(
    canvas: Canvas,
    scale: Scale,
    items: Sequence[Execution],
    top: float,
    row_h: int,
    max_rows: int,
) -> None:
    """A bar per execution from start to result (red when it failed), in packed rows."""
    rows = pack(items, scale)
    if len(rows) > max_rows:
        _running(canvas, scale, items, top + 15)
        return
    for r, row in enumerate(rows):
        y = top + 5 + r * row_h
        for item in row:
            x0, x1, inside = bar_extent(item, scale)
            fill, stroke = (
                (COLORS["error_fill"], COLORS["error"])
                if item.is_error
                else (COLORS["tool_fill"], COLORS["tool"])
            )
            dash = "" if item.finished else ' stroke-dasharray="3 2"'
            canvas.mark(
                "tool error" if item.is_error else "tool run" if item.finished else "tool running"
            )
            tip = f"{item.name}: {clip(item.content, 300)}"
            canvas.add(
                f'<rect x="{x0:.1f}" y="{y + 2}" width="{x1 - x0:.1f}" height="{row_h - 5}" rx="3" '
                f'fill="{fill}" stroke="{stroke}"{dash}><title>{escape(tip)}</title></rect>'
            )
            if item.asked is not None:  # the wait for approval: a thin line up to the bar
                canvas.mark("approval wait")
                xa = scale.x(item.asked)
                canvas.add(
                    f'<line x1="{xa:.1f}" x2="{x0:.1f}" y1="{y + row_h / 2}" y2="{y + row_h / 2}" '
                    f'stroke="{COLORS["tool"]}" stroke-dasharray="2 2"><title>waiting for '
                    f"approval</title></line>"
                )
            if item.progress:
                canvas.mark("tool progress")
            for at in item.progress:  # progress: white ticks on the bar
                xp = scale.x(at)
                canvas.add(
                    f'<line x1="{xp:.1f}" x2="{xp:.1f}" y1="{y + 4}" y2="{y + row_h - 5}" '
                    f'stroke="#fff" stroke-width="2"><title>progress</title></line>'
                )
            label_x = x0 + 4 if inside else x1 + 4
            canvas.text(
                label_x,
                y + row_h / 2 + 3,
                bar_label(item),
                size=10,
                fill=COLORS["error"] if item.is_error else "#1d3f80",
            )


def draw_calls(
    canvas: Canvas, scale: Scale, marbles: Sequence[Marble], y: float, max_marks: int
) -> None:
    """Calls the model makes: a dot (named) where a call starts, a tick per argument piece.

    Every call's name is shown: above the dot, else below it when the one above would overlap
    a neighbour's, else shortened (the whole name in its tooltip).
    """
    if len(marbles) > max_marks:
        density(canvas, scale, [m.time for m in marbles], y, COLORS["tool"], "tool-call events")
        return
    label_rows = [(y - 7, -math.inf), (y + 14, -math.inf)]  # baseline, where the last one ends
    for marble in marbles:
        x = scale.x(marble.time)
        if marble.value.type == "tool_call_started":
            name = marble.value.name
            tip = f"{name} ({marble.value.call_id}) @ {scale.label(marble.time)}"
            canvas.add(dot(x, y, 5, COLORS["tool"], tip))
            canvas.mark("tool call")
            label_rows = _place_label(canvas, label_rows, x + 8, name)
        else:
            tip = f"arguments {marble.value.delta!r} @ {scale.label(marble.time)}"
            canvas.mark("argument piece")
            canvas.add(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 4}" y2="{y + 4}" stroke="#7d9be0">'
                f"<title>{escape(tip)}</title></line>"
            )


def _place_label(
    canvas: Canvas, rows: list[tuple[float, float]], x: float, name: str
) -> list[tuple[float, float]]:
    """Draw ``name`` at ``x`` in the first row where it fits whole, else shortened in the row
    that ends first; returns the rows' new ends."""
    for text in (name, clip(name, 4)):
        for i, (_, end) in enumerate(rows):
            if end + 4 <= x:
                return _label_at(canvas, rows, i, x, text, name)
    i = min(range(len(rows)), key=lambda r: rows[r][1])
    return _label_at(canvas, rows, i, max(x, rows[i][1] + 4), clip(name, 2), name)


def _label_at(
    canvas: Canvas, rows: list[tuple[float, float]], i: int, x: float, text: str, name: str
) -> list[tuple[float, float]]:
    baseline, _ = rows[i]
    canvas.add(
        f'<text x="{x:.1f}" y="{baseline:.1f}" font-size="10" fill="#1d3f80" '
        f'class="call-label"><title>{escape(name)}</title>{escape(text)}</text>'
    )
    return [(b, x + len(text) * CHAR_W) if r == i else (b, e) for r, (b, e) in enumerate(rows)]


def draw_points(
    canvas: Canvas, scale: Scale, lane: str, marbles: Sequence[Marble], y: float, max_marks: int
) -> None:
    """A lane of values: ticks for chunks, dots for text and reasoning, labelled marbles else."""
    color = LANE_COLORS.get(lane, COLORS["chunk"] if lane == "chunks" else COLORS["value"])
    if len(marbles) > max_marks:
        density(canvas, scale, [m.time for m in marbles], y, color, lane)
        return
    symbols, legend = symbolize(lane, [m.value for m in marbles])
    big = lane not in ("chunks", "text", "reasoning") and len(marbles) <= 40
    checks = lane == "checks"  # its symbols say more than a clipped event repr
    for marble, symbol in zip(marbles, symbols, strict=True):
        x = scale.x(marble.time)
        tip = f"{clip(repr(legend.get(symbol, marble.value)), 200)} @ {scale.label(marble.time)}"
        tip += f" on {marble.thread}"
        if lane == "chunks":
            tick = CHUNK_COLORS.get(symbol, "#b8bec8")
            canvas.mark(f"chunk {symbol}" if symbol in CHUNK_COLORS else "chunk other")
            canvas.add(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 7}" y2="{y + 7}" stroke="{tick}" '
                f'stroke-width="1.5"><title>{escape(tip)}</title></line>'
            )
        elif big:
            canvas.mark(lane if lane in LANE_COLORS else "value")
            canvas.add(dot(x, y, 8, CHECK_COLORS.get(symbol, color) if checks else color, tip))
            canvas.text(
                x,
                y + 3.5,
                symbol if checks else clip(str(marble.value), 3, "")[:3],
                size=9,
                fill="#fff",
                anchor="middle",
                weight="600",
            )
        else:
            canvas.mark(lane if lane in LANE_COLORS else "value")
            canvas.add(dot(x, y, 4.5, color, tip))


def _running(canvas: Canvas, scale: Scale, items: Sequence[Execution], y: float) -> None:
    """How many executions run in each time slice (when there are too many rows to draw)."""
    bins = max(1, int((scale.x1 - scale.x0) / 4))
    width = (scale.t1 - scale.t0) / bins
    counts: dict[int, int] = {}
    for item in items:
        first = int((item.start - scale.t0) / width)
        last = max(first, math.ceil((item.end - scale.t0) / width) - 1)
        for i in range(max(0, first), min(bins, last + 1)):
            counts[i] = counts.get(i, 0) + 1
    bars(canvas, scale, counts, width, y, COLORS["tool"], "tools running")
    canvas.mark("density")
