"""A recorded run: what one case's run did, as data (``Report.runs`` holds them).

::

    agent.stream(question) ──► seq'd events ──► RecordedRun(events, times, result | error)
                                               times: seconds since the run started, on the
                                               run's clock (virtual under a TestScheduler)

Everything an evaluator needs is here, so a recording scores the same live, from a file, or
replayed (:mod:`rxreact.evals._rescore`). Events are told apart by their ``type`` string, not
``isinstance``: a pydantic model's class check goes through ``ABCMeta``, and these scans run
over every event of every run scored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from rxreact.events import (
    AgentEvent,
    FinalAnswer,
    ToolCallStarted,
)
from rxreact.messages import Usage
from rxreact.result import AgentResult

if TYPE_CHECKING:
    from rxreact.evals._case import Case

__all__ = ["RecordedRun", "ToolCallMade"]


@dataclass(frozen=True)
class ToolCallMade:
    """A tool call the run's agent made, read from its events."""

    round: int
    index: int
    """Its position in its round."""
    name: str
    arguments: dict[str, Any]
    """The parsed arguments (``{}`` when they were not a JSON object)."""
    raw: str
    """The arguments as the model wrote them."""

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


@dataclass(frozen=True, eq=False)
class RecordedRun:
    """One run of one case: its events with their times, and how it ended."""

    case: str
    """The case's name."""
    repeat: int
    """Which repetition of the case (0-based; ``repeat=k`` gives 0..k-1)."""
    agent: str
    """The agent's ``name``."""
    model: str
    """The agent's model, as its ``repr`` reads (``OpenAIChatModel(model='gpt-4o-mini')``)."""
    events: tuple[AgentEvent, ...]
    """Every event of the run, in ``seq`` order."""
    times: tuple[float, ...]
    """Each event's time, in seconds since the run started, on the run's clock."""
    duration: float | None
    """Seconds from the start to the run's end (``None``: it never ended: a truncated file)."""
    error: str | None = None
    """Why the run failed (``"ModelTimeoutError: ..."``), ``None`` when it answered."""
    result: AgentResult | None = None
    """The run's result, when it answered."""
    virtual: bool = False
    """True when the run's clock was virtual (a ``TestScheduler``)."""
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) at which the run started."""
    start: float = 0.0
    """The run's clock when it started: virtual seconds on the evaluation's scheduler (runs
    in flight at once overlap), monotonic seconds for a live run."""
    complete: bool = True
    """False for a recording that was cut short (a run killed mid-write)."""
    file: str | None = field(default=None, compare=False)
    """The file it was recorded to or read from, if any."""
    source: Case | None = field(default=None, compare=False, repr=False)
    """The case as it was when the run was made (question, expected, metadata, history),
    so that re-scoring needs no dataset."""
    output_types: tuple[str, ...] | None = None
    """The class names (its class and bases) of the typed output, as recorded; ``None``:
    read them from the output itself (a run in memory)."""

    def __repr__(self) -> str:
        state = "failed" if self.error else "answered"
        return (
            f"RecordedRun(case={self.case!r}, repeat={self.repeat}, {len(self.events)} events, "
            f"{state})"
        )

    @property
    def final(self) -> FinalAnswer | None:
        """The run's ``final_answer`` event (the root run's), if it answered."""
        for event in reversed(self.events):
            if event.type == "final_answer" and not event.path:
                return event
        return None

    @cached_property
    def answer_round(self) -> int | None:
        """The round that answered: the final answer's, or the last round that decided to
        answer in a run that failed."""
        final = self.final
        if final is not None:
            return final.round
        rounds = [
            e.round
            for e in self.events
            if e.type == "round_finished" and not e.path and e.mode == "final_answer"
        ]
        return rounds[-1] if rounds else None

    @cached_property
    def first_token(self) -> float | None:
        """Seconds from the start to the first text delta of the answer round."""
        answer_round = self.answer_round
        if answer_round is None:
            return None
        for event, time in zip(self.events, self.times, strict=False):
            if event.type == "text_delta" and not event.path and event.round == answer_round:
                return time
        return None

    @cached_property
    def usage(self) -> Usage | None:
        """What the agent's model requests used: the final answer's sum, or the rounds' of a
        failed run."""
        final = self.final
        if final is not None:
            return final.usage
        total: Usage | None = None
        for event in self.events:
            if event.type == "round_finished" and event.usage is not None:
                total = event.usage + total
        return total

    @property
    def answer(self) -> str | None:
        """The answer's text, ``None`` when the run failed."""
        final = self.final
        return None if final is None else final.text

    @cached_property
    def output_type_names(self) -> tuple[str, ...]:
        """The class names of the answer's typed output (or of its text: ``str``...), which
        a recording read from a file keeps although the output reads back as plain JSON."""
        if self.output_types is not None:
            return self.output_types
        final = self.final
        if final is None:
            return ()
        output = final.output if final.output is not None else final.text
        return tuple(cls.__name__ for cls in type(output).__mro__)

    @cached_property
    def tool_calls(self) -> tuple[ToolCallMade, ...]:
        """The root agent's tool calls in order (by round, then position in the round)."""
        return tool_calls_of(self.events)


def tool_calls_of(events: Sequence[AgentEvent]) -> tuple[ToolCallMade, ...]:
    """The root run's tool calls in ``events``, their arguments joined from the deltas."""
    started: dict[tuple[int, int], ToolCallStarted] = {}
    pieces: dict[tuple[int, int], list[str]] = {}
    for event in events:
        if event.path:
            continue
        if event.type == "tool_call_started":
            key = (event.round, event.index)
            started[key] = event
            pieces[key] = []
        elif event.type == "tool_call_args_delta":
            bucket = pieces.get((event.round, event.index))
            if bucket is not None:
                bucket.append(event.delta)
    calls = []
    for key in sorted(started):
        raw = "".join(pieces[key])
        try:
            parsed = json.loads(raw) if raw.strip() else {}
        except ValueError:
            parsed = {}
        calls.append(
            ToolCallMade(
                key[0], key[1], started[key].name, parsed if isinstance(parsed, dict) else {}, raw
            )
        )
    return tuple(calls)
