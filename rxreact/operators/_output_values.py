"""``output_values``: a typed run's events as the values of its answer as it forms (what
``agent.iter_output`` yields).

::

    events:  -s-p1--p2-v-R-s-p3--F|     p output_partial, R output_reset, F final_answer
    result:  ---p1--p2---{}--p3--o|     o: final_answer.output (the validated object)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable
from reactivex import operators as ops

from rxreact.events import FinalAnswer, OutputPartial, OutputReset

__all__ = ["NOT_OUTPUT", "output_value", "output_values"]

NOT_OUTPUT: Any = object()
"""What :func:`output_value` gives for an event that carries no value of the answer."""


def output_value(event: Any) -> Any:
    """The root run's answer as ``event`` shows it, or :data:`NOT_OUTPUT`."""
    if event.path:  # an agent tool's own answer is not the run's
        return NOT_OUTPUT
    kind = type(event)
    if kind is OutputPartial:
        return event.output
    if kind is OutputReset:
        return {}
    if kind is FinalAnswer:
        return event.output
    return NOT_OUTPUT


def output_values() -> Callable[[Observable[Any]], Observable[Any]]:
    def values(events: Observable[Any]) -> Observable[Any]:
        return events.pipe(
            ops.map(output_value),
            ops.filter(lambda value: value is not NOT_OUTPUT),
        )

    return values
