"""Recording an Observable: every notification with its time, thread, kind and lane.

::

    source:     -a--b---c|
    record():   Recording([next a @1, next b @4, next c @8, completed @9])

Times are scheduler time. Under a virtual-time scheduler (``TestScheduler``) a marble's time is
the scheduler's ``clock``; otherwise it is ``time.monotonic()`` seconds since the recorder was
made (:func:`record` makes it right before subscribing). A run is recorded the same way in both,
so the same code draws a test's virtual run and a real one on thread pools.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from rxreact.marbles.lanes import LANE_ORDER

__all__ = ["Marble", "MarbleKind", "Recording"]

_T = TypeVar("_T")

MarbleKind = Literal["next", "error", "completed"]
"""``next``: a value; ``error``: the stream failed; ``completed``: the stream ended."""


@dataclass(frozen=True, slots=True)
class Marble:
    """One recorded notification."""

    time: float
    """Scheduler time: the virtual clock, or real seconds since the recorder was made."""
    kind: MarbleKind
    value: Any
    """The value (``next``), the exception (``error``) or ``None`` (``completed``)."""
    thread: str
    """Name of the thread the notification arrived on."""
    lane: str
    """The lane it is drawn in (see :mod:`rxreact.marbles.lanes`)."""
    side: bool = False
    """True for values of a side stream (:meth:`Recorder.tap`), such as model chunks."""


class Recording:
    """A finished (or partial) recording: the marbles, in arrival order, and how to draw them.

    Renders as an ASCII marble line per lane (:meth:`to_marbles`, :meth:`to_text`) and as an SVG
    diagram (:meth:`to_svg`), shown inline by Jupyter.
    """

    def __init__(self, marbles: Sequence[Marble], *, start: float, virtual: bool) -> None:
        self.marbles: tuple[Marble, ...] = tuple(marbles)
        """Every notification, in arrival order."""
        self.start = start
        """Time of subscription (the virtual clock then, or ``0.0`` for real time)."""
        self.virtual = virtual
        """True when times are virtual (recorded against a virtual-time scheduler)."""

    def __repr__(self) -> str:
        state = "completed" if self.completed else "error" if self.error else "open"
        return (
            f"Recording({len(self.marbles)} marbles, lanes={self.lanes}, {state}, "
            f"{self.duration:g} s {'virtual' if self.virtual else 'real'})"
        )

    def __len__(self) -> int:
        return len(self.marbles)

    def __iter__(self) -> Iterator[Marble]:
        return iter(self.marbles)

    @property
    def values(self) -> list[Any]:
        """The recorded stream's own values (side streams left out), in order."""
        return [m.value for m in self.marbles if m.kind == "next" and not m.side]

    @property
    def terminal(self) -> Marble | None:
        """The ``completed`` or ``error`` marble, if the stream ended."""
        return next((m for m in self.marbles if m.kind != "next"), None)

    @property
    def completed(self) -> bool:
        """True when the stream completed."""
        return self.terminal is not None and self.terminal.kind == "completed"

    @property
    def error(self) -> BaseException | None:
        """The exception the stream ended with, if it failed."""
        terminal = self.terminal
        return terminal.value if terminal is not None and terminal.kind == "error" else None

    @property
    def end(self) -> float:
        """Time of the last marble (``start`` when there is none)."""
        return max((m.time for m in self.marbles), default=self.start)

    @property
    def duration(self) -> float:
        """Seconds from subscription to the last marble."""
        return self.end - self.start

    @property
    def threads(self) -> list[str]:
        """Names of the threads notifications arrived on, in order of first appearance."""
        return list(dict.fromkeys(m.thread for m in self.marbles))

    @property
    def lanes(self) -> list[str]:
        """Names of the lanes holding values, in display order."""
        present = list(dict.fromkeys(m.lane for m in self.marbles if m.kind == "next"))
        known = [lane for lane in LANE_ORDER if lane in present]
        return known + [lane for lane in present if lane not in LANE_ORDER]

    def lane(self, name: str) -> list[Marble]:
        """The ``next`` marbles of one lane, in order."""
        return [m for m in self.marbles if m.kind == "next" and m.lane == name]

    def of_type(self, event_type: str) -> list[Any]:
        """The recorded values whose ``type`` is ``event_type`` (agent events)."""
        return [v for v in self.values if getattr(v, "type", None) == event_type]

    def times(self, event_type: str) -> list[float]:
        """Times (since subscription) of the values whose ``type`` is ``event_type``."""
        return [
            m.time - self.start
            for m in self.marbles
            if m.kind == "next" and getattr(m.value, "type", None) == event_type
        ]

    # -- renderings -------------------------------------------------------------------------------

    def to_marbles(self, lane: str | None = None, *, unit: float = 1.0) -> str:
        """One lane as a marble line: ``-`` per ``unit`` of time, ``|`` completion, ``#`` error,
        ``(a,b)`` for values within one unit. See :mod:`rxreact.marbles.ascii`.

        Args:
            lane: the lane; may be left out when the recording has only one.
            unit: seconds per character.
        """
        from rxreact.marbles.ascii import marble_line

        return marble_line(self, self._one_lane(lane), unit=unit)

    def legend(self, lane: str | None = None) -> dict[str, Any]:
        """What each symbol of :meth:`to_marbles` stands for (usable as a marble ``lookup``)."""
        from rxreact.marbles.lanes import symbolize

        return symbolize(lane := self._one_lane(lane), [m.value for m in self.lane(lane)])[1]

    def to_text(self, *, unit: float = 1.0, lanes: Sequence[str] | None = None) -> str:
        """Every lane as an aligned marble line, then each lane's legend."""
        from rxreact.marbles.ascii import marble_text

        return marble_text(self, unit=unit, lanes=lanes)

    def to_svg(self, **options: Any) -> str:
        """The run as an SVG diagram; ``options`` as for :func:`rxreact.marbles.svg.render_svg`."""
        from rxreact.marbles.svg import render_svg

        return render_svg(self, **options)

    def _repr_svg_(self) -> str:
        return self.to_svg()

    def _repr_html_(self) -> str:
        return f'<div style="max-width:100%;overflow-x:auto">{self.to_svg()}</div>'

    def _one_lane(self, lane: str | None) -> str:
        if lane is not None:
            return lane
        lanes = self.lanes
        if len(lanes) <= 1:
            return lanes[0] if lanes else "value"
        raise ValueError(f"name the lane: this recording has {lanes or 'none'}")
