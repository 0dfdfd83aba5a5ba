from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable
from reactivex import operators as ops

_E = TypeVar("_E")


def events_of_(*kinds: type[_E]) -> Callable[[Observable[Any]], Observable[_E]]:
    if not kinds:
        raise TypeError("events_of() needs at least one event class, e.g. events_of(FinalAnswer)")

    def _events_of(source: Observable[Any]) -> Observable[_E]:
        return source.pipe(ops.filter(lambda event: isinstance(event, kinds)))

    return _events_of
