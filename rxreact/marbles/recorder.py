"""Recording as it happens: :class:`Recorder` (an observer) and :func:`record`.

::

    source:     -a--b---c|
    record():   Recording([next a @1, next b @4, next c @8, completed @9])

Times are scheduler time. Under a virtual-time scheduler (``TestScheduler``) a marble's time is
the scheduler's ``clock``; otherwise it is ``time.monotonic()`` seconds since the recorder was
made (:func:`record` makes it right before subscribing).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.scheduler import VirtualTimeScheduler

from rxreact.marbles.lanes import lane_of
from rxreact.marbles.recording import Marble, MarbleKind, Recording
from rxreact.messages import ChatRequest
from rxreact.model.base import ChatModel
from rxreact.model.chunks import ChatChunk, ModelResponse

__all__ = ["Recorder", "record"]

_T = TypeVar("_T")


class Recorder(abc.ObserverBase[Any]):
    """An observer that records what it receives; subscribe it yourself to record any run.

    ::

        recorder = Recorder(scheduler)              # the clock: virtual, or real time from now
        subscription = source.subscribe(recorder)
        ...
        recorder.recording                          # a snapshot, at any moment

    Args:
        scheduler: a virtual-time scheduler to read the clock from; anything else (or ``None``)
            means real time, in seconds since the recorder was made.
        lane_of: the lane of a value (default: by agent event kind, see
            :mod:`rxreact.marbles.lanes`).
    """

    def __init__(
        self,
        scheduler: abc.SchedulerBase | None = None,
        *,
        lane_of: Callable[[Any], str] = lane_of,
    ) -> None:
        self._virtual = scheduler if isinstance(scheduler, VirtualTimeScheduler) else None
        self._lane_of = lane_of
        self._lock = threading.Lock()
        self._marbles: list[Marble] = []
        self._done = threading.Event()
        self._when_done: list[Callable[[], None]] = []
        self._t0 = time.monotonic()
        self.start: float = self._now() if self._virtual is not None else 0.0
        """The time the recording starts from."""

    def _now(self) -> float:
        if self._virtual is not None:
            return self._virtual.to_seconds(self._virtual.clock)
        return time.monotonic() - self._t0

    def _add(self, kind: MarbleKind, value: Any, lane: str, side: bool = False) -> None:
        marble = Marble(self._now(), kind, value, threading.current_thread().name, lane, side)
        with self._lock:
            self._marbles.append(marble)

    def on_next(self, value: Any) -> None:
        """Record a value."""
        self._add("next", value, self._lane_of(value))

    def on_error(self, error: Exception) -> None:
        """Record the failure that ended the stream."""
        self._add("error", error, "")
        self._finish()

    def on_completed(self) -> None:
        """Record the end of the stream."""
        self._add("completed", None, "")
        self._finish()

    def _finish(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._when_done = self._when_done, []
        for callback in callbacks:
            callback()

    def when_done(self, callback: Callable[[], None]) -> abc.DisposableBase:
        """Call ``callback()`` once the stream ended (at once if it has), on the thread that
        ends it; dispose the result to forget it. Waiting without holding a thread, unlike
        :meth:`wait`: an asyncio server sets a future from it."""
        with self._lock:
            ended = self._done.is_set()
            if not ended:
                self._when_done.append(callback)
        if ended:
            callback()
            return Disposable()

        def forget() -> None:
            with self._lock:
                if callback in self._when_done:
                    self._when_done.remove(callback)

        return Disposable(forget)

    @property
    def done(self) -> bool:
        """True once the recorded stream completed or failed."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait (real time) until the stream ends; False when ``timeout`` passed first."""
        return self._done.wait(timeout)

    @property
    def recording(self) -> Recording:
        """What was recorded so far, as a :class:`Recording` (a snapshot)."""
        with self._lock:
            marbles = list(self._marbles)
        return Recording(marbles, start=self.start, virtual=self._virtual is not None)

    def tap(self, lane: str | None = None) -> Callable[[Observable[_T]], Observable[_T]]:
        """Record a side stream's values into this recording, passing them through unchanged.

        ::

            source:  -a-b-|
            tap():   -a-b-|      a and b recorded (side=True); its end is not recorded

        Args:
            lane: the lane for its values (default: ``lane_of`` of each value).
        """

        def record_value(value: Any) -> None:
            self._add("next", value, lane or self._lane_of(value), side=True)

        return ops.do_action(record_value)

    def wrap_model(self, model: ChatModel) -> ChatModel:
        """``model``, with every chunk it streams recorded into the ``chunks`` lane."""
        return _RecordedModel(model, self)


class _RecordedModel:
    """A :class:`~rxreact.model.base.ChatModel` whose streamed chunks are recorded."""

    def __init__(self, model: ChatModel, recorder: Recorder) -> None:
        self.model = model
        self._recorder = recorder

    def __repr__(self) -> str:
        return f"recorded({self.model!r})"

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        return self.model.stream(request).pipe(self._recorder.tap("chunks"))

    def complete(self, request: ChatRequest) -> ModelResponse:
        return self.model.complete(request)

    def __getattr__(self, name: str) -> Any:  # requests, base_url... of the wrapped model
        return getattr(self.model, name)


def record(
    observable: Observable[Any],
    scheduler: abc.SchedulerBase | None = None,
    *,
    until: float | None = None,
    timeout: float | None = 30.0,
    lane_of: Callable[[Any], str] = lane_of,
    recorder: Recorder | None = None,
) -> Recording:
    """Subscribe to ``observable``, let it run, and return what it did.

    With a virtual-time ``scheduler`` (``TestScheduler``) the scheduler is run until nothing is
    left to do (or for ``until`` virtual seconds): no real time passes. Otherwise this waits, in
    real time, for the stream to end, at most ``timeout`` (or ``until``) seconds. A run
    still going then is disposed and the recording returned has no terminal marble.

    Args:
        observable: what to record; subscribed with ``scheduler`` as the default scheduler.
        scheduler: the scheduler the run uses, for its clock.
        until: stop after this many seconds (virtual or real) even if the stream goes on.
        timeout: real-time limit when not virtual; ``None`` waits forever.
        lane_of: the lane of a value.
        recorder: record into this recorder (made just before subscribing otherwise), e.g. one
            whose :meth:`Recorder.wrap_model` also records a model's chunks.

    Returns:
        The :class:`Recording`.
    """
    recorder = recorder or Recorder(scheduler, lane_of=lane_of)
    subscription = observable.subscribe(recorder, scheduler=scheduler)
    try:
        if isinstance(scheduler, VirtualTimeScheduler):
            if until is None:
                # The base start(): TestScheduler.start() would also move the clock to 1000.
                VirtualTimeScheduler.start(scheduler)
            else:
                scheduler.advance_to(recorder.start + until)
        else:
            recorder.wait(until if until is not None else timeout)
    finally:
        if not recorder.done:
            subscription.dispose()
    return recorder.recording
