"""The legend under the diagram: one entry per kind of glyph the drawing actually uses.

The lanes mark what they draw (:meth:`Canvas.mark`, with a key of :data:`GLYPHS`); the legend
shows exactly those keys, each with the glyph itself, so nothing on the page goes unexplained.
"""

from __future__ import annotations

from collections.abc import Callable

from rxreact.marbles._svg_canvas import CHAR_W, CHUNK_COLORS, COLORS, LANE_COLORS, Canvas

__all__ = ["GLYPHS", "LEGEND_ROW", "draw_legend", "legend_height"]

LEGEND_ROW = 18
_LEFT = 10


def _bar(color: str, stroke: str | None = None, dash: str = "") -> Callable[[float, float], str]:
    def draw(x: float, y: float) -> str:
        return (
            f'<rect x="{x:.1f}" y="{y - 5}" width="14" height="10" rx="2" fill="{color}" '
            f'stroke="{stroke or color}"{dash}/>'
        )

    return draw


def _diamond(stroke: str) -> Callable[[float, float], str]:
    def draw(x: float, y: float) -> str:
        c = x + 7
        return (
            f'<path d="M{c:.1f},{y - 6} L{c + 5:.1f},{y} L{c:.1f},{y + 6} L{c - 5:.1f},{y} Z" '
            f'fill="{COLORS["tool"]}" stroke="{stroke}" stroke-width="2"/>'
        )

    return draw


def _dot(color: str, r: float = 4.5) -> Callable[[float, float], str]:
    return lambda x, y: f'<circle cx="{x + 7:.1f}" cy="{y}" r="{r}" fill="{color}"/>'


def _tick(color: str, width: float = 1.5) -> Callable[[float, float], str]:
    return lambda x, y: (
        f'<line x1="{x + 7:.1f}" x2="{x + 7:.1f}" y1="{y - 6}" y2="{y + 6}" stroke="{color}" '
        f'stroke-width="{width}"/>'
    )


def _progress(x: float, y: float) -> str:
    """A tool bar with a white progress tick, as drawn on the tools lane."""
    return _bar(COLORS["tool_fill"], COLORS["tool"])(x, y) + (
        f'<line x1="{x + 7:.1f}" x2="{x + 7:.1f}" y1="{y - 4}" y2="{y + 4}" stroke="#fff" '
        f'stroke-width="2"/>'
    )


def _approval_wait(x: float, y: float) -> str:
    return (
        f'<line x1="{x:.1f}" x2="{x + 14:.1f}" y1="{y}" y2="{y}" stroke="{COLORS["tool"]}" '
        f'stroke-dasharray="2 2"/>'
    )


def _triangle(x: float, y: float) -> str:
    return (
        f'<path d="M{x + 1:.1f},{y - 5} L{x + 13:.1f},{y - 5} L{x + 7:.1f},{y + 4} Z" '
        f'fill="{COLORS["forced"]}"/>'
    )


def _ring(x: float, y: float) -> str:
    return (
        f'<circle cx="{x + 7:.1f}" cy="{y}" r="5" fill="#fff" stroke="{COLORS["answer"]}" '
        f'stroke-width="2.5"/>'
    )


def _density(x: float, y: float) -> str:
    return "".join(
        f'<rect x="{x + 1 + 4 * i:.1f}" y="{y + 6 - h}" width="3" height="{h}" '
        f'fill="{COLORS["chunk"]}" opacity="0.75"/>'
        for i, h in enumerate((4, 10, 7))
    )


def _error_end(x: float, y: float) -> str:
    return (
        f'<line x1="{x + 7:.1f}" x2="{x + 7:.1f}" y1="{y - 7}" y2="{y + 7}" '
        f'stroke="{COLORS["error"]}" stroke-width="2"/>'
        f'<text x="{x + 10:.1f}" y="{y - 1:.1f}" font-size="9" fill="{COLORS["error"]}">✕</text>'
    )


GLYPHS: dict[str, tuple[str, Callable[[float, float], str]]] = {
    "undecided": ("round, mode not yet decided", _bar(COLORS["undecided"])),
    "answer round": ("answer round", _bar(COLORS["answer"])),
    "tool round": ("tool round", _bar(COLORS["tool"])),
    "forced round": ("forced round", _bar(COLORS["forced_band"], "#e6c9a0")),
    "mode decided": ("mode decided", _diamond("#fff")),
    "mode switched": ("mode switched late", _diamond(COLORS["forced"])),
    "max rounds": ("max rounds reached", _triangle),
    "final answer": ("final answer", _ring),
    "tool run": ("tool run", _bar(COLORS["tool_fill"], COLORS["tool"])),
    "tool error": ("tool error", _bar(COLORS["error_fill"], COLORS["error"])),
    "tool running": (
        "no result yet",
        _bar(COLORS["tool_fill"], COLORS["tool"], ' stroke-dasharray="3 2"'),
    ),
    "tool progress": ("progress reported", _progress),
    "nested run": ("agent run as a tool", _bar("#eef3fb", "#9db3de")),
    "approval wait": ("waiting for approval", _approval_wait),
    "tool call": ("model calls a tool", _dot(COLORS["tool"], 5)),
    "argument piece": ("argument piece", _tick("#7d9be0", 1)),
    "chunk t": ("text chunk", _tick(CHUNK_COLORS["t"])),
    "chunk z": ("reasoning chunk", _tick(CHUNK_COLORS["z"])),
    "chunk c": ("tool-call chunk", _tick(CHUNK_COLORS["c"])),
    "chunk f": ("finish chunk", _tick(CHUNK_COLORS["f"])),
    "chunk other": ("other chunk (role, usage)", _tick("#b8bec8")),
    "text": ("answer text", _dot(LANE_COLORS["text"])),
    "reasoning": ("reasoning text", _dot(LANE_COLORS["reasoning"])),
    "value": ("value", _dot(COLORS["value"])),
    "density": ("count per time slice", _density),
    "completed": ("completed", _tick("#333", 2)),
    "stopped": ("stopped", _tick(COLORS["stopped"], 2)),
    "error": ("failed", _error_end),
}
"""Every glyph the diagram draws: its legend label and how to draw a sample of it."""


def _entries(canvas: Canvas) -> list[str]:
    return [key for key in GLYPHS if key in canvas.used]


def _entry_width(key: str) -> float:
    return 20 + len(GLYPHS[key][0]) * CHAR_W + 14


def legend_height(canvas: Canvas, width: int) -> int:
    """Height of the legend for what ``canvas`` drew, wrapped to ``width``."""
    rows, x = 1, float(_LEFT)
    entries = _entries(canvas)
    if not entries:
        return 0
    for key in entries:
        if x + _entry_width(key) > width - _LEFT and x > _LEFT:
            rows, x = rows + 1, float(_LEFT)
        x += _entry_width(key)
    return rows * LEGEND_ROW + 8


def draw_legend(canvas: Canvas, top: float, width: int) -> None:
    """The legend's entries, wrapped into rows starting at ``top``."""
    x, y = float(_LEFT), top + LEGEND_ROW / 2 + 4
    parts: list[str] = []
    for key in _entries(canvas):
        label, sample = GLYPHS[key]
        if x + _entry_width(key) > width - _LEFT and x > _LEFT:
            x, y = float(_LEFT), y + LEGEND_ROW
        parts.append(sample(x, y))
        parts.append(
            f'<text x="{x + 20:.1f}" y="{y + 3.5:.1f}" font-size="10" fill="#555">{label}</text>'
        )
        x += _entry_width(key)
    canvas.add(f'<g class="legend">{"".join(parts)}</g>')
