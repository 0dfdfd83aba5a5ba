"""A run's trajectory in words: the steps two runs are compared on.

::

    events:  round_started tool_call_started(get_weather) args... round_finished
             tool_result(get_weather) round_started text_delta... final_answer
    steps:   round 1: called `get_weather(city='Paris')`
             round 1: `get_weather` returned 'sunny'
             round 2: answered 'It is sunny.'

Deltas are gathered into the call or the answer they make up, so two runs whose model
streamed the same answer in other pieces do not differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from rxreact.evals._run import RecordedRun
from rxreact.evals.evaluators._words import shown

__all__ = ["Step", "first_divergence", "steps"]


@dataclass(frozen=True)
class Step:
    """One step of a trajectory: where (``round``), and what, in words."""

    round: int
    words: str

    def __str__(self) -> str:
        return f"round {self.round}: {self.words}"


def steps(run: RecordedRun) -> list[Step]:
    """The root run's steps, in order."""
    calls = {(c.round, c.index): c for c in run.tool_calls}
    out: list[Step] = []
    seen_calls: set[tuple[int, int]] = set()
    for event in run.events:
        if event.path:
            continue
        if event.type == "tool_result":
            out.append(Step(event.round, f"`{event.name}` returned {shown(event.content, 40)}"))
        elif event.type == "max_rounds_reached":
            out.append(Step(event.round, "reached max_rounds"))
        elif event.type == "final_answer":
            out.append(Step(event.round, f"answered {shown(event.text)}"))
        elif event.type == "round_finished":
            for key in sorted(k for k in calls if k[0] == event.round and k not in seen_calls):
                seen_calls.add(key)
                out.append(Step(event.round, f"called `{calls[key]}`"))
    if run.error is not None:
        last = out[-1].round if out else 1
        out.append(Step(last, f"failed: {run.error}"))
    return out


def first_divergence(run: RecordedRun, baseline: RecordedRun) -> str | None:
    """Where ``run`` first parts from ``baseline``, in words; ``None`` when they do not."""
    ours, theirs = steps(run), steps(baseline)
    for mine, base in zip(ours, theirs, strict=False):
        if mine != base:
            if mine.round == base.round:
                return f"round {mine.round}: {mine.words}, baseline {base.words}"
            return f"{mine}; baseline {base}"
    if len(ours) > len(theirs):
        return f"{ours[len(theirs)]}; the baseline had ended"
    if len(theirs) > len(ours):
        return f"ended before the baseline's {theirs[len(ours)]}"
    return None
