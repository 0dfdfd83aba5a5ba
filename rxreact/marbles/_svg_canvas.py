"""SVG drawing primitives: the time scale, the element list, colours, glyphs and density bars."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

COLORS = {
    "answer": "#2e9d5b",
    "tool": "#3b6fd8",
    "tool_fill": "#c9dafa",
    "undecided": "#c3c8d1",
    "reasoning": "#8e5cc4",
    "chunk": "#7a8699",
    "value": "#4a6fa5",
    "forced": "#c86a00",
    "forced_band": "#fff1dc",
    "error": "#d43c3c",
    "error_fill": "#f8c9c9",
    "stopped": "#6b7385",
}
CHUNK_COLORS = {"t": COLORS["answer"], "z": COLORS["reasoning"], "c": COLORS["tool"], "f": "#333"}
CHECK_COLORS = {"P": COLORS["answer"], "X": COLORS["error"], "E": COLORS["forced"]}
LANE_COLORS = {"text": COLORS["answer"], "reasoning": COLORS["reasoning"]}
CHAR_W = 6.2  # approximate width of a 10 px sans-serif character


@dataclass(frozen=True)
class Scale:
    """Maps times (seconds) to x (pixels); ``step`` is the tick interval."""

    t0: float
    t1: float
    x0: float
    x1: float
    step: float
    by_order: bool = False
    """Times are event numbers (the recording laid out by order), not seconds."""

    def x(self, t: float) -> float:
        return self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0)

    def ticks(self) -> list[float]:
        return [self.t0 + i * self.step for i in range(round((self.t1 - self.t0) / self.step) + 1)]

    def label(self, t: float) -> str:
        if self.by_order:
            return f"#{round(t - self.t0)}"
        seconds = round(t - self.t0, 9)
        if self.step < 0.5 and seconds:
            return f"{round(seconds * 1000, 6):g} ms"
        return f"{seconds:g} s"


@dataclass
class Canvas:
    """SVG elements collected in drawing order."""

    parts: list[str] = field(default_factory=list)
    used: set[str] = field(default_factory=set)
    """Kinds of glyph drawn so far (keys of ``_svg_legend.GLYPHS``), for the legend."""

    def add(self, element: str) -> None:
        self.parts.append(element)

    def mark(self, *keys: str) -> None:
        """Note that glyphs of these kinds were drawn (the legend explains each)."""
        self.used.update(keys)

    def text(
        self,
        x: float,
        y: float,
        content: str,
        *,
        size: int = 11,
        fill: str = "#333",
        anchor: str = "start",
        weight: str = "normal",
    ) -> None:
        self.parts.append(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" '
            f'text-anchor="{anchor}" font-weight="{weight}">{escape(content)}</text>'
        )

    def render(self) -> str:
        return "".join(self.parts)


def density(
    canvas: Canvas, scale: Scale, times: Iterable[float], y: float, color: str, what: str
) -> None:
    """Counts per time slice as bars: the summary of a lane too crowded for one glyph each."""
    bins = max(1, int((scale.x1 - scale.x0) / 4))
    width = (scale.t1 - scale.t0) / bins
    counts: dict[int, int] = {}
    for t in times:
        i = min(bins - 1, max(0, int((t - scale.t0) / width)))
        counts[i] = counts.get(i, 0) + 1
    bars(canvas, scale, counts, width, y, color, what)
    canvas.mark("density")


def bars(
    canvas: Canvas,
    scale: Scale,
    counts: dict[int, int],
    width: float,
    y: float,
    color: str,
    what: str,
) -> None:
    peak = max(counts.values(), default=1)
    px = (scale.x1 - scale.x0) * width / (scale.t1 - scale.t0)
    for i, count in sorted(counts.items()):
        a = scale.t0 + i * width
        h = max(2.0, 22 * count / peak)
        tip = f"{count:,} {what} in {scale.label(a)}–{scale.label(a + width)}"
        canvas.add(
            f'<rect x="{scale.x(a):.1f}" y="{y + 11 - h:.1f}" width="{max(1.0, px - 0.6):.2f}" '
            f'height="{h:.1f}" fill="{color}" opacity="0.75"><title>{escape(tip)}</title></rect>'
        )


def dot(x: float, y: float, r: float, color: str, tip: str) -> str:
    return (
        f'<circle cx="{x:.1f}" cy="{y}" r="{r}" fill="{color}" stroke="#fff" stroke-width="1">'
        f"<title>{escape(tip)}</title></circle>"
    )


def diamond(x: float, y: float, color: str, stroke: str, tip: str) -> str:
    return (
        f'<path d="M{x:.1f},{y - 7} L{x + 6:.1f},{y} L{x:.1f},{y + 7} L{x - 6:.1f},{y} Z" '
        f'fill="{color}" stroke="{stroke}" stroke-width="2"><title>{escape(tip)}</title></path>'
    )


def clip(text: str, limit: int, ellipsis: str = "…") -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - len(ellipsis)] + ellipsis
