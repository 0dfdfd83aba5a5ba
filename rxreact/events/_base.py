"""What every agent event carries: the private base class of :mod:`rxreact.events`.

Its own module so that the event families defined beside :mod:`rxreact.events`
(:mod:`rxreact.events._deltas`, :mod:`rxreact.events._checks`) share it without importing the
union they are part of.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

__all__ = ["_Event"]


class _Event(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    round: int
    """The 1-based round (model request) of the run this event belongs to."""
    seq: int = 0
    """The event's 1-based position in its run: consecutive (1, 2, 3, ...) in the order
    subscribers receive the events, in cold ``stream()`` subscriptions and hot runs alike. A
    cursor for ``run.events(after=seq)``. ``0`` only on an event no run has emitted (one you
    built yourself). Events of agents run as tools share their root run's sequence."""
    agent: str = "agent"
    """The ``name`` of the agent whose run emitted this event (``ReactAgent(name=...)``)."""
    path: tuple[str, ...] = ()
    """Where the emitting run sits: the tool call ids from the root run down to it, ``()`` for
    the root run's own events, ``("call_1",)`` for a run of an agent tool the root called as
    ``call_1``, and so on for every level of nesting."""

    def _repr_html_(self) -> str:
        """A one-line card in Jupyter: the kind, the round, the interesting field."""
        from rxreact.marbles._html import event_html

        return event_html(self)
