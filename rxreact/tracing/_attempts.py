"""A round's ``chat`` span, one per attempt: a :class:`~rxreact.FallbackModel` that moves to
another model ends the span of the one it leaves and opens one for the next::

    round:   -R-a-b-S-a'-b'-F|          S: model_switched
    spans:    [chat m1  ]                error.type = the reason
                        [chat m2    ]    each naming its model and its breaker's state

:class:`AttemptSpans` stands where the span operator expects one span and sends each call to
the attempt's span of the moment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["AttemptSpans", "breaker_state"]


def breaker_state(model: Any, label: str) -> str | None:
    """The breaker state of the model ``label`` names in the chain ``model`` (``None``: not a
    chain, or no breakers)."""
    labels = getattr(model, "labels", None)
    breakers = getattr(model, "breakers", None)
    if not labels or not breakers or label not in labels:
        return None
    return str(breakers[labels.index(label)].state)


class AttemptSpans:
    """The spans of one round's attempts; calls go to the current one."""

    def __init__(self, open_span: Callable[[str], Any], label: str) -> None:
        self._open = open_span
        self.current: Any = open_span(label)

    def switched(self, to_model: str, reason: str) -> None:
        """The round moved to ``to_model``: end this attempt's span as failed, open the next."""
        span = self.current
        span.set_attribute("error.type", "model_switched")
        span.set_attribute("rxreact.fallback.reason", reason)
        span.end()
        self.current = self._open(to_model)

    def set_attribute(self, key: str, value: Any) -> None:
        self.current.set_attribute(key, value)

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self.current.set_attributes(attributes)

    def record_exception(self, error: BaseException) -> None:
        self.current.record_exception(error)

    def set_status(self, status: Any) -> None:
        self.current.set_status(status)

    def end(self) -> None:
        self.current.end()
