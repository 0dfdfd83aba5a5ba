"""Where the SVG's bars go: a recording's rounds and tool executions as spans in time, packed
into as few rows as keep them apart. Drawing them is :mod:`rxreact.marbles._svg_lanes`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rxreact.marbles._svg_canvas import CHAR_W, Scale

if TYPE_CHECKING:
    from rxreact.marbles.recording import Marble, Recording


@dataclass(frozen=True)
class RoundSpan:
    """One round as drawn: from its start to the next round's start (or the run's end)."""

    number: int
    start: float
    end: float
    finished: float | None
    decisions: tuple[tuple[float, str], ...]
    forced: bool


@dataclass(frozen=True)
class Execution:
    """One tool execution: started -> result (or still running when the recording ends)."""

    name: str
    start: float
    end: float
    finished: bool
    is_error: bool
    content: str
    progress: tuple[float, ...] = ()
    """Times of the call's ``tool_progress`` events."""
    asked: float | None = None
    """When approval was requested (the wait runs from here to ``start``)."""


def round_spans(recording: Recording) -> list[RoundSpan]:
    spans: list[dict[str, Any]] = []
    forced_next = False
    for marble in recording.marbles:
        kind = getattr(marble.value, "type", None) if marble.kind == "next" else None
        if kind == "round_started":
            spans.append(
                dict(
                    number=marble.value.round,
                    start=marble.time,
                    finished=None,
                    decisions=[],
                    forced=forced_next,
                )
            )
            forced_next = False
        elif kind == "max_rounds_reached":
            forced_next = True
        elif spans and kind == "round_mode_decided":
            spans[-1]["decisions"].append((marble.time, marble.value.mode))
        elif spans and kind == "round_finished":
            spans[-1]["finished"] = marble.time
    ends = [s["start"] for s in spans[1:]] + [recording.end] if spans else []
    return [
        RoundSpan(end=end, **{**s, "decisions": tuple(s["decisions"])})
        for s, end in zip(spans, ends, strict=True)
    ]


def executions(recording: Recording) -> list[Execution]:
    by_type: dict[str, dict[tuple[int, str], Marble]] = {}
    progress: dict[tuple[int, str], list[float]] = {}
    for marble in recording.lane("tools"):
        key = (marble.value.round, marble.value.call_id)
        if marble.value.type == "tool_progress":
            progress.setdefault(key, []).append(marble.time)
        else:
            by_type.setdefault(marble.value.type, {}).setdefault(key, marble)
    started = by_type.get("tool_execution_started", {})
    results = by_type.get("tool_result", {})
    asked = by_type.get("tool_approval_requested", {})
    found = []
    for key in {**asked, **started}:
        begin = started.get(key)
        request = asked.get(key)
        result = results.get(key)
        first = begin or request
        assert first is not None
        end = result.time if result else recording.end
        found.append(
            Execution(
                name=first.value.name,
                # a denied call never started: its bar is the moment of its result
                start=begin.time if begin else end,
                end=end,
                finished=result is not None,
                is_error=bool(result and result.value.is_error),
                content=result.value.content if result else "(no result)",
                progress=tuple(progress.get(key, ())),
                asked=request.time if request else None,
            )
        )
    return found


def bar_label(execution: Execution) -> str:
    seconds = execution.end - execution.start
    took = f"{seconds:.3g} s" if seconds >= 1 or seconds == 0 else f"{seconds * 1000:.3g} ms"
    return f"{execution.name} {took}" + (" ✕" if execution.is_error else "")


def bar_extent(execution: Execution, scale: Scale) -> tuple[float, float, bool]:
    """Bar start and end x, and whether its label fits inside (else it goes to the right)."""
    x0 = scale.x(execution.start)
    x1 = max(scale.x(execution.end), x0 + 3)
    return x0, x1, x1 - x0 >= len(bar_label(execution)) * CHAR_W + 8


def pack(items: Sequence[Execution], scale: Scale) -> list[list[Execution]]:
    """Executions in rows, each in the first row where it (and its label) overlaps nothing."""
    rows: list[list[Execution]] = []
    row_ends: list[float] = []
    for item in sorted(items, key=lambda e: e.start):
        x0, x1, inside = bar_extent(item, scale)
        right = x1 if inside else x1 + 4 + len(bar_label(item)) * CHAR_W
        for i, end in enumerate(row_ends):
            if end + 4 <= x0:
                rows[i].append(item)
                row_ends[i] = right
                break
        else:
            rows.append([item])
            row_ends.append(right)
    return rows
