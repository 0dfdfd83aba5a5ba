"""One operator for the protocols that turn a run's events into their own messages: each
event through a mapper that returns the messages it makes, the run's error turned into the
mapper's last messages (a client reads a failed run in its protocol, not as a broken stream).

::

    events:    -a----b----#         #: the run failed (or was cancelled)
    mapped:    -(a1)-(b1b2)-(f)|    f: the mapper's messages for the failure; no error out
    a mapper that raises on b:      -(a1)-#   (a bug in the mapping: an error out)

Used by the A2A, OpenAI-compatible and AI SDK streams; the AG-UI stream keeps its own
subscriber, which also starts and ends segments of a run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from reactivex import Observable, abc

__all__ = ["EventMapper", "mapped_events"]

_T_co = TypeVar("_T_co", covariant=True)
_T = TypeVar("_T")


class EventMapper(Protocol[_T_co]):
    """What one subscription's mapper gives: messages at the start, per event, on failure."""

    def opening(self) -> Sequence[_T_co]:
        """Messages sent at subscription, before any event."""
        ...

    def feed(self, event: Any) -> Sequence[_T_co]:
        """The messages ``event`` makes (maybe none)."""
        ...

    def fail(self, error: Exception) -> Sequence[_T_co]:
        """The last messages of a run that ended with ``error``."""
        ...


def mapped_events(
    make: Callable[[], EventMapper[_T]],
) -> Callable[[Observable[Any]], Observable[_T]]:
    """The operator: a new mapper from ``make()`` for each subscription (see the module)."""

    def operator(source: Observable[Any]) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            mapper = make()

            def on_next(event: Any) -> None:
                try:
                    messages = mapper.feed(event)
                except Exception as error:  # a bug in the mapping, not the run's error
                    observer.on_error(error)
                    return
                for message in messages:
                    observer.on_next(message)

            def on_error(error: Exception) -> None:
                for message in mapper.fail(error):
                    observer.on_next(message)
                observer.on_completed()

            for message in mapper.opening():
                observer.on_next(message)
            return source.subscribe(on_next, on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
