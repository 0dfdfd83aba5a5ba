"""ASCII marble lines: RxPY's marble syntax, one line per lane.

::

    an agent answering text_reply("Hello there world", interval=1.0), drawn with unit=0.5:

        rounds  R-A-----(f,F,|)     R round_started, A mode final_answer, f round_finished,
        text    --a-b-c-|           F final_answer; a, b, c the three text deltas

Each character is ``unit`` seconds, counted from subscription: ``-`` is time passing, a letter
a value (see :mod:`rxreact.marbles.lanes` for the symbols), ``|`` completion, ``#`` an error,
``(a,b)`` values that fall within the same unit. Every lane ends with the stream's own
``|`` or ``#``: a lane is the recorded stream filtered to some kinds of values.

As in RxPY, a glyph takes one unit per character, so a group ``(a,b)`` takes five units; a value
due while an earlier glyph is still being written is written right after it (later than it
happened). With a unit small enough that no glyphs touch, a line parses back with
``reactivex.observable.marbles.parse(line, timespan=unit, lookup=legend)`` to the recorded times,
rounded down to the unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rxreact.marbles.lanes import symbolize

if TYPE_CHECKING:
    from rxreact.marbles.recording import Recording

__all__ = ["marble_line", "marble_text"]

_MAX_LINE = 100_000


def marble_line(recording: Recording, lane: str, *, unit: float = 1.0) -> str:
    """The marble line of one lane of ``recording``.

    Args:
        recording: what was recorded.
        lane: the lane to draw.
        unit: seconds per character.

    Returns:
        The line, e.g. ``"-a-b-c|"``.
    """
    if unit <= 0:
        raise ValueError("unit must be positive")
    marbles = recording.lane(lane)
    symbols, _ = symbolize(lane, [m.value for m in marbles])
    frames: dict[int, list[str]] = {}
    for marble, symbol in zip(marbles, symbols, strict=True):
        frames.setdefault(_frame(marble.time, recording.start, unit), []).append(symbol)
    terminal = recording.terminal
    if terminal is not None:
        glyph = "|" if terminal.kind == "completed" else "#"
        frames.setdefault(_frame(terminal.time, recording.start, unit), []).append(glyph)
    line = ""
    for frame in sorted(frames):
        if frame > _MAX_LINE:
            raise ValueError(
                f"the line would be {frame} characters long: use a larger unit than {unit:g}"
            )
        line += "-" * (frame - len(line))
        symbols_here = frames[frame]
        line += symbols_here[0] if len(symbols_here) == 1 else f"({','.join(symbols_here)})"
    return line


def marble_text(
    recording: Recording, *, unit: float = 1.0, lanes: Sequence[str] | None = None
) -> str:
    """Every lane's marble line, aligned under its name, then each lane's legend.

    ::

        rounds  R-A-----(f,F,|)
        text    --a-b-c-|
        ---
        rounds  R='round_started' A='mode: final_answer' f='round_finished' F='final_answer'
        text    a='Hello ' b='there ' c='world'
    """
    names = list(lanes) if lanes is not None else recording.lanes
    width = max((len(n) for n in names), default=0) + 2
    lines = [f"{name:<{width}}{marble_line(recording, name, unit=unit)}" for name in names]
    lines.append("---")
    for name in names:
        legend = recording.legend(name)
        described = " ".join(f"{s}={_short(v)}" for s, v in legend.items())
        lines.append(f"{name:<{width}}{described}")
    if recording.error is not None:
        lines.append(f"{'#':<{width}}{recording.error!r}")
    return "\n".join(lines)


def _frame(t: float, start: float, unit: float) -> int:
    # The epsilon keeps 0.3 / 0.1 in frame 3 despite binary floating point.
    return max(0, math.floor((t - start) / unit + 1e-9))


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value) if isinstance(value, str) else str(value)  # quotes show the spaces
    return text if len(text) <= limit else text[: limit - 1] + "…"
