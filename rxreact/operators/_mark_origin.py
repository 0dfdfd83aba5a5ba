"""``mark_origin``: write a run's ``agent`` name and ``path`` on the events it emits itself.

Events are built with the defaults (``agent="agent"``, ``path=()``) wherever the run makes
them; this layer, at the run's exit, marks the ones that still carry the default path with the
run's own. Events of an agent the run called as a tool arrive already marked by their own run
(a non-empty path) and pass unchanged, so every level marks only its own. The agent's name is
read at each event: after a handoff the run's events are the target's. This layer marks the
runs of agent tools; a root run's events are marked in its ``RunOutput``, where ``seq`` is
written, and a root run of an agent with the default name and no handoffs is not marked at
all (the defaults are right)::

    source:          -a-b-H-c-|      (H handoff from "triage" to "billing")
    mark_origin:     -a-b-H-c-|      a, b, H marked "triage"; c marked "billing"

The marks are written into the frozen event's ``__dict__``, as ``seq`` is (see
``rxreact.rx._run_output`` for why that is safe): the event is fresh and nothing has seen it.
"""

from __future__ import annotations

from typing import Any, Protocol

from reactivex import Observable, abc

from rxreact.rx._fused import Fused, subscribe_fused

__all__ = ["Origin", "mark_origin_"]


class _Named(Protocol):
    name: str


class Origin(Protocol):
    """Where a run's events come from (a ``RunLoop``): read at each event, since a handoff
    changes the agent mid-run."""

    @property
    def agent(self) -> _Named: ...

    @property
    def path(self) -> tuple[str, ...]: ...


def mark_origin_(source: Observable[Any], origin: Origin) -> Observable[Any]:
    """``source`` with its own events marked as emitted by ``origin.agent`` at
    ``origin.path``."""
    path = origin.path

    def subscribe(
        observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        forward = observer.on_next

        def on_next(event: Any) -> None:
            if not event.path:
                marks = event.__dict__
                marks["agent"] = origin.agent.name
                marks["path"] = path
            forward(event)

        return subscribe_fused(source, on_next, observer.on_error, observer.on_completed, scheduler)

    return Fused(subscribe)
