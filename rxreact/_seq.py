"""``stamping(on_next)``: number a run's events (``seq``) at the one point they all pass.

A run's events are made on many threads (the model's events on the agent's scheduler, tool
events on the tools' threads, in completion order), so the order they were *constructed* in is
not the order subscribers receive them. The one serialized point is the run's output observer:
Rx guarantees its ``on_next`` calls never overlap, and the order of those calls is the order
every subscriber sees. ``seq`` is stamped there.

Why writing ``event.__dict__["seq"]`` on a frozen model is safe:

- pydantic keeps field values in the instance ``__dict__``; ``frozen`` only blocks
  ``__setattr__``. ``model_dump``, JSON, ``==`` and ``hash`` all read ``__dict__``, so the
  stamped value is the field's value everywhere.
- every event is a fresh object built by its own run for this emission and emitted once
  (nothing caches or shares events between runs), and no one else holds it before it reaches
  the output observer: stamping happens before any subscriber, log or hash sees it.

The alternatives cost more per event (measured in ``benchmarks/runs.py``'s notes): an
``ops.map`` layer adds an Observable and two observer calls; ``model_copy(update=...)``
allocates a second model per chunk.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

__all__ = ["stamping"]


def stamping(on_next: Callable[[Any], None]) -> Callable[[Any], None]:
    """``on_next`` that sets ``seq`` = 1, 2, 3, ... on each event, then passes it on.

    ::

        events:   -a--b-----c-|
        stamped:  -a1-b2----c3-|
    """
    counter = itertools.count(1)

    def stamp(event: Any) -> None:
        event.__dict__["seq"] = next(counter)
        on_next(event)

    return stamp
