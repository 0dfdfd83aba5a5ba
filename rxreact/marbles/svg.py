"""The SVG diagram of a recording: one lane per event kind on a shared time axis.

Hand-built SVG (no plotting dependency), shown inline by Jupyter through
``Recording._repr_svg_`` / ``_repr_html_``::

            │ round 1                   │ round 2 · forced    │
    rounds  │ ◆━━━━━━━━━━━━━━━━━━━━━━━━━│▲◆━━━━━━━━━━━━━━━━━●│      bar: a round, coloured by mode
    chunks  │ ||||| |||||               │ |||||||||||||||||   │      ticks, or density bins
    text    │                           │  ● ● ● ● ● ● ● ●    │
    tools   │        ▭▭▭ get_weather    │                     │      a bar per execution
            └──────┴──────┴──────┴──────┴──────┴──────┴──────┘
            0 s    1 s    2 s ...

Lanes with more than ``max_marks`` values are summarised as density bins (counts per time
slice), and more tool executions than ``max_tool_rows`` rows can hold as the number running per
slice, so a run of thousands of chunks stays a small, readable drawing.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from rxreact.errors import RunCancelledError
from rxreact.marbles import _svg_lanes as lanes_
from rxreact.marbles._svg_canvas import COLORS, Canvas, Scale, clip
from rxreact.marbles._svg_legend import draw_legend, legend_height
from rxreact.marbles._svg_nested import NestedRun, draw_nested, nested_runs, root_only

if TYPE_CHECKING:
    from rxreact.marbles.recording import Recording

__all__ = ["render_svg"]

_LABEL_W = 118
_RIGHT = 24
_HEADER = 46
_BAND_HEADER = 18
_ROW = 30
_TOOL_ROW = 20
_AXIS = 30
_FONT = "ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"


def render_svg(
    recording: Recording,
    *,
    width: int = 960,
    title: str | None = None,
    max_marks: int = 200,
    max_tool_rows: int = 8,
    layout: str = "auto",
) -> str:
    """Draw ``recording`` as an SVG document.

    Args:
        recording: what to draw.
        width: width in pixels (the height follows from the lanes).
        title: the heading (default: a summary of the run).
        max_marks: a lane with more values is drawn as density bins.
        max_tool_rows: more concurrent tool rows than this are drawn as a running count.
        layout: ``"time"`` places marbles at their times, ``"order"`` one step per event
            (in arrival order), ``"auto"`` by time unless no time passed at all (a scripted run
            with ``interval=0``), which would put every marble on one spot.

    Returns:
        The SVG text (UTF-8, a standalone document).
    """
    if layout not in ("auto", "time", "order"):
        raise ValueError(f"layout must be 'auto', 'time' or 'order', got {layout!r}")
    by_order = layout == "order" or (
        layout == "auto" and recording.duration == 0 and len(recording.marbles) > 1
    )
    if by_order:
        recording = _by_order(recording)
    scale = _scale(recording, width, by_order)
    nested = nested_runs(recording)  # agents run as tools: bands under the tool lane
    if nested:
        recording = root_only(recording)
    canvas = Canvas()
    rounds = lanes_.round_spans(recording)
    executions = lanes_.executions(recording)
    rows: list[tuple[str, str, int]] = []  # lane, label, height
    bands: dict[int, NestedRun] = {}  # row -> the nested run it draws
    for lane in recording.lanes:
        count = len(recording.lane(lane))
        summary = " · binned" if count > max_marks else ""
        if lane == "tools":
            tool_rows = lanes_.pack(executions, scale)
            height = _TOOL_ROW * len(tool_rows) + 10 if len(tool_rows) <= max_tool_rows else _ROW
            failed = sum(e.is_error for e in executions)
            shown = "" if len(tool_rows) <= max_tool_rows else " · count"
            runs = _plural(len(executions), "run")
            rows.append((lane, f"{runs}, {failed} failed{shown}", height))
            for run in nested:
                bands[len(rows)] = run
                rows.append((f"\u21b3 {run.agent}", run.call_id, _ROW))
        elif lane == "rounds":
            rows.append((lane, _plural(len(rounds), "round"), _ROW))
        elif lane == "tool_calls":
            calls = len(recording.of_type("tool_call_started"))
            rows.append((lane, f"{_plural(calls, 'call')}{summary}", _ROW))
        else:
            rows.append((lane, f"{count:,}{summary}", _ROW))
    top = _HEADER + _BAND_HEADER
    bottom = top + sum(h for _, _, h in rows)

    _bands(canvas, scale, rounds, top, bottom, many=len(rounds) > max_marks)
    _grid(canvas, scale, top, bottom)
    y = top
    for row, (lane, label, row_height) in enumerate(rows):
        canvas.add(f'<line x1="0" x2="{scale.x1 + _RIGHT}" y1="{y}" y2="{y}" stroke="#e3e7ee"/>')
        canvas.text(10, y + row_height / 2 - 1, lane, weight="600", size=12, fill="#222")
        canvas.text(10, y + row_height / 2 + 12, label, size=10, fill="#888")
        middle = y + row_height / 2
        if row in bands:
            draw_nested(canvas, scale, bands[row], middle)
        elif lane == "rounds":
            lanes_.draw_rounds(canvas, scale, recording, rounds, middle, max_marks)
        elif lane == "tools":
            lanes_.draw_tools(canvas, scale, executions, y, _TOOL_ROW, max_tool_rows)
        elif lane == "tool_calls":
            lanes_.draw_calls(canvas, scale, recording.lane(lane), middle, max_marks)
        else:
            lanes_.draw_points(canvas, scale, lane, recording.lane(lane), middle, max_marks)
        y += row_height
    _terminal(canvas, scale, recording, top, bottom)
    _axis(canvas, scale, bottom)
    _header(canvas, recording, title, width, by_order)
    height = bottom + _AXIS + legend_height(canvas, width)
    draw_legend(canvas, bottom + _AXIS, width)  # last: it shows what the lanes drew
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family={quoteattr(_FONT)} font-size="11">'
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
        f"{canvas.render()}</svg>"
    )


def _by_order(recording: Recording) -> Recording:
    """The same marbles one time step apart, in arrival order."""
    from rxreact.marbles.recording import Recording

    marbles = [replace(m, time=float(i)) for i, m in enumerate(recording.marbles)]
    return Recording(marbles, start=0.0, virtual=recording.virtual)


def _scale(recording: Recording, width: int, by_order: bool = False) -> Scale:
    span = recording.duration
    step = _nice_step(span / 8 if span > 0 else 1.0)
    if by_order:
        step = max(1.0, step)
    # A last marble a hair past a tick (5.001 s) does not earn an empty tick of its own.
    ticks = max(1, math.ceil(span / step - 0.01))
    return Scale(
        t0=recording.start,
        t1=recording.start + ticks * step,
        x0=_LABEL_W,
        x1=width - _RIGHT,
        step=step,
        by_order=by_order,
    )


def _nice_step(raw: float) -> float:
    """The 1-2-5 step nearest above ``raw``."""
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * magnitude >= raw * 0.999:
            return float(factor * magnitude)
    return float(10 * magnitude)


def _bands(
    canvas: Canvas,
    scale: Scale,
    rounds: list[lanes_.RoundSpan],
    top: float,
    bottom: float,
    *,
    many: bool,
) -> None:
    """A background band per round (the forced one tinted), with its name above the lanes."""
    if many:
        return
    for i, span in enumerate(rounds):
        x0, x1 = scale.x(span.start), scale.x(span.end)
        fill = COLORS["forced_band"] if span.forced else ("#f4f6fa" if i % 2 == 0 else "#ffffff")
        if span.forced:
            canvas.mark("forced round")
        canvas.add(
            f'<rect x="{x0:.1f}" y="{top - _BAND_HEADER}" width="{max(1.0, x1 - x0):.1f}" '
            f'height="{bottom - top + _BAND_HEADER}" fill="{fill}"/>'
        )
        canvas.add(
            f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{top - _BAND_HEADER}" y2="{bottom}" '
            f'stroke="#9aa3b2" stroke-dasharray="3 3"/>'
        )
        name = f"round {span.number}" + (" · forced" if span.forced else "")
        short = f"R{span.number}" + ("!" if span.forced else "")
        label = name if x1 - x0 > 7 * len(name) + 8 else short if x1 - x0 > 8 * len(short) else ""
        if label:
            color = COLORS["forced"] if span.forced else "#556"
            canvas.text(x0 + 5, top - 5, label, size=11, fill=color, weight="600")


def _grid(canvas: Canvas, scale: Scale, top: float, bottom: float) -> None:
    for t in scale.ticks():
        x = scale.x(t)
        canvas.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="#eef0f4"/>')


def _axis(canvas: Canvas, scale: Scale, y: float) -> None:
    canvas.add(f'<line x1="{scale.x0}" x2="{scale.x1}" y1="{y}" y2="{y}" stroke="#555"/>')
    for t in scale.ticks():
        x = scale.x(t)
        canvas.add(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + 5}" stroke="#555"/>')
        canvas.text(x, y + 17, scale.label(t), size=10, fill="#444", anchor="middle")


def _terminal(
    canvas: Canvas, scale: Scale, recording: Recording, top: float, bottom: float
) -> None:
    """Completion as a dark line across the lanes, a stop as a grey one, an error as a red one
    with its message."""
    terminal = recording.terminal
    if terminal is None:
        return
    x = scale.x(terminal.time)
    if terminal.kind == "completed" or _stopped(terminal.value):
        key, color, tip = (
            ("completed", "#333", "completed")
            if terminal.kind == "completed"
            else ("stopped", COLORS["stopped"], "stopped")
        )
        canvas.mark(key)
        canvas.add(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="{color}" '
            f'stroke-width="2"><title>{tip} at {scale.label(terminal.time)}</title></line>'
        )
        return
    message = f"{type(terminal.value).__name__}: {terminal.value}"
    canvas.mark("error")
    canvas.add(
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{bottom}" stroke="{COLORS["error"]}" '
        f'stroke-width="2"><title>{escape(message)}</title></line>'
    )
    canvas.text(x, top - 5, "✕", size=12, fill=COLORS["error"], anchor="middle", weight="700")


def _stopped(error: BaseException | None) -> bool:
    """A cancelled run was stopped on purpose: drawn as an ending, not as a failure."""
    return isinstance(error, RunCancelledError)


def _header(
    canvas: Canvas, recording: Recording, title: str | None, width: int, by_order: bool
) -> None:
    """The title, and the answer (or the error) under it."""
    rounds = lanes_.round_spans(recording)
    executions = lanes_.executions(recording)
    took = f"{recording.duration:g}" if recording.virtual else f"{recording.duration:.3g}"
    if title is None:
        parts = [f"{len(recording.values):,} events"]
        if rounds:
            forced = " (1 forced)" if any(span.forced for span in rounds) else ""
            parts = [_plural(len(rounds), "round") + forced, _plural(len(executions), "tool call")]
        if by_order:
            parts.append("laid out by event order")
        else:
            parts.append(f"{took} s {'virtual' if recording.virtual else 'real time'}")
        title = " · ".join(parts)
    # About 8.3 px per 14 px bold character.
    canvas.text(10, 19, clip(title, int((width - 34) / 8.3)), size=14, weight="600", fill="#222")
    answers = recording.of_type("final_answer")
    error = recording.error
    room = int((width - 30) / 6.3)
    at = f"event #{len(recording.marbles) - 1}" if by_order else f"{took} s"
    if _stopped(error):
        canvas.text(10, 36, f"■ stopped at {at}", size=11, fill=COLORS["stopped"], weight="600")
    elif error is not None:
        message = f"✕ failed at {at}: {type(error).__name__}: {error}"
        canvas.text(10, 36, clip(message, room), size=11, fill=COLORS["error"], weight="600")
    elif answers:
        answer = "answer: " + str(answers[-1].text)
        canvas.text(10, 36, clip(answer, room), size=11, fill="#555")


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'s' * (count != 1)}"
